import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Turns } from '../src/turns.js';

class Stalled extends Error {}

/** A task that settles when the test says. */
function heldTask(): { task: () => Promise<string>; end: (value: string) => void; started: Promise<void> } {
  let end: (value: string) => void = () => undefined;
  let start: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (start = resolve));
  const ended = new Promise<string>((resolve) => (end = resolve));
  return { task: () => (start(), ended), end, started };
}

/** A task that fails when the test says. */
function failingLater(): { task: () => Promise<never>; fail: (error: Error) => void; started: Promise<void> } {
  let fail: (error: Error) => void = () => undefined;
  let start: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (start = resolve));
  return { task: () => (start(), new Promise<never>((_, reject) => (fail = reject))), fail: (error) => fail(error), started };
}

/**
 * How each of `runs` failed, by `describe` (the error's class unless told): waited for all at once, so
 * that none fails before it is waited for. A run that did not fail is `'ran'`.
 */
async function failures(runs: readonly Promise<unknown>[], describe: (error: unknown) => unknown = (error) => (error as object).constructor): Promise<unknown[]> {
  return (await Promise.allSettled(runs)).map((outcome) => (outcome.status === 'rejected' ? describe(outcome.reason) : 'ran'));
}

/** Keeps the one thread for `ms`: time passes, and no timer can run meanwhile. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('turns', () => {
  it('run their tasks one at a time, in the order given', async () => {
    const turns = new Turns();
    const first = heldTask();
    const order: string[] = [];
    const runs = [turns.run(first.task), turns.run(async () => (order.push('second'), 'second'))];
    await first.started;
    order.push('first');
    first.end('first');
    assert.deepEqual(await Promise.all(runs), ['first', 'second']);
    assert.deepEqual(order, ['first', 'second']);
  });

  it('give up on every task waiting behind one that hangs, after the limit, and run the next one given', async () => {
    const turns = new Turns({ afterMs: 50, error: () => new Stalled('waited') });
    const hanging = heldTask();
    const running = turns.run(hanging.task);
    await hanging.started;
    let ran = 0;
    const waiting = Array.from({ length: 10 }, () => turns.run(async () => (ran += 1)));
    // Each gives up on its own deadline, not on the one before it: all ten, none run. Taken all at once,
    // as they may give up in one timer phase, before a loop awaiting them in turn reached the next.
    assert.deepEqual(await failures(waiting), Array(10).fill(Stalled));
    assert.equal(ran, 0);
    hanging.end('late');
    assert.equal(await running, 'late');
    assert.equal(await turns.run(async () => 'next'), 'next');
  });

  it('keep a task waiting past the limit while the tasks before it end well, each within it', async () => {
    const turns = new Turns({ afterMs: 1_000, error: () => new Stalled('waited') });
    // Three tasks of 400 ms each: the last one given waits 1.2 s, and a task ends well every 0.4 s.
    const before = Array.from({ length: 3 }, () => turns.run(async () => busyFor(400)));
    const last = turns.run(async () => 'ran');
    await Promise.all(before);
    assert.equal(await last, 'ran');
  });

  it('keep waiting without a limit, however long the task before takes', async () => {
    const turns = new Turns();
    const hanging = heldTask();
    const timers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const timersBefore = timers();
    void turns.run(hanging.task);
    let settled = false;
    const waiting = turns.run(async () => 'ran').finally(() => (settled = true));
    // No timer is armed for the waiting task, so nothing can ever make it give up; the wait below
    // only shows that it is still waiting.
    assert.equal(timers(), timersBefore);
    busyFor(100);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false);
    hanging.end('done');
    assert.equal(await waiting, 'ran');
  });

  it('fail the tasks waiting behind one that failed with a shared failure with it, without running them, and run the next one given', async () => {
    class Shut extends Error {}
    const turns = new Turns(undefined, (error) => error instanceof Shut);
    const failingTask = failingLater();
    const failing = turns.run(failingTask.task);
    let ran = 0;
    const waiting = Array.from({ length: 5 }, () => turns.run(async () => (ran += 1)));
    await failingTask.started;
    const shut = new Shut('locked');
    failingTask.fail(shut);
    assert.deepEqual(await failures([failing, ...waiting], (error) => error === shut), Array(6).fill(true));
    assert.equal(ran, 0);
    // Given after the failure: it runs, and may find the database back.
    assert.equal(await turns.run(async () => 'next'), 'next');

    // Another failure is each task's own.
    const otherTask = failingLater();
    const other = turns.run(otherTask.task);
    const behind = turns.run(async () => 'ran');
    await otherTask.started;
    otherTask.fail(new Error('bad statement'));
    await assert.rejects(other, /bad statement/);
    assert.equal(await behind, 'ran');
  });
});
