import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CatchUpPace } from '../../src/http/feed/catch-up-pace.js';

/** Whether `next` settles before the event loop's next turn: at once, without waiting for a timer. */
async function atOnce(next: Promise<void>): Promise<boolean> {
  const turn = new Promise<'later'>((resolve) => setImmediate(() => resolve('later')));
  return (await Promise.race([next.then(() => 'now' as const), turn])) === 'now';
}

describe('the pace of sending the change streams catching up', () => {
  it('lets every piece go at once while no other request is answered', async () => {
    const pace = new CatchUpPace({ share: 0.1, burstMs: 10, answered: () => 7 });
    for (let i = 0; i < 20; i++) {
      assert.equal(await atOnce(pace.ready()), true, `piece ${i} waited`);
      pace.spent(50);
    }
  });

  it('while other requests are answered, lets the burst go at once and then holds each piece until the sending is the share of the time', async () => {
    let answered = 0;
    const pace = new CatchUpPace({ share: 0.5, burstMs: 20, answered: () => ++answered });
    const started = performance.now();
    // Pieces of 10 ms at half the time take 20 ms each; the burst (20 ms of sending) pays for 40 ms.
    for (let i = 0; i < 3; i++) {
      assert.equal(await atOnce(pace.ready()), true, `piece ${i} of the burst waited`);
      pace.spent(10);
    }
    const fourth = pace.ready();
    assert.equal(await atOnce(fourth), false, 'the piece past the burst went at once');
    await fourth;
    pace.spent(10);
    await pace.ready();
    // After four pieces (80 ms of time, less the burst's 40), the fifth went (timers may fire a millisecond early).
    assert.ok(performance.now() - started >= 38, `held for ${performance.now() - started} ms`);
  });

  it('forgets what went while the worker was quiet: the burst goes at once when other requests are answered again', async () => {
    let answered = 0;
    let busy = true;
    const pace = new CatchUpPace({ share: 0.1, burstMs: 10, answered: () => (busy ? ++answered : answered) });
    assert.equal(await atOnce(pace.ready()), true);
    pace.spent(10);
    busy = false;
    // No answer since: the worker counts as busy a moment longer (100 ms), then as quiet.
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (let i = 0; i < 5; i++) {
      assert.equal(await atOnce(pace.ready()), true, `quiet piece ${i} waited`);
      pace.spent(10);
    }
    busy = true;
    for (let i = 0; i < 2; i++) {
      assert.equal(await atOnce(pace.ready()), true, `piece ${i} of the burst once busy again waited for the quiet ones`);
      pace.spent(10);
    }
    assert.equal(await atOnce(pace.ready()), false);
  });
});
