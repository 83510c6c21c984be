import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WriteKind } from '../../src/storage/store.js';
import { WorkerWriteNotices } from '../../src/workers/worker-group.js';

/** Notices told to the primary, each settled by the test as the primary's answer would be. */
function toldNotices(): { notices: WorkerWriteNotices; told: WriteKind[]; answer: () => void } {
  const told: WriteKind[] = [];
  const answers: Array<() => void> = [];
  const notices = new WorkerWriteNotices((kind) => {
    told.push(kind);
    return new Promise<void>((resolve) => answers.push(resolve));
  });
  return { notices, told, answer: () => answers.shift()!() };
}

/** Resolves once `count` notices were told, within a few turns of the event loop (no I/O is involved). */
async function toldTimes(told: readonly WriteKind[], count: number): Promise<void> {
  for (let turn = 0; turn < 100 && told.length < count; turn++) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(told.length, count, 'the next notice was never told');
}

describe("a worker's notices of its writes", () => {
  it('tell the writes that wait for the one on its way together, as a change when any of them may have changed a product', async () => {
    const { notices, told, answer } = toldNotices();
    const first = notices.announce('adds');
    const waiting = [notices.announce('adds'), notices.announce('changes'), notices.announce('adds')];
    assert.deepEqual(told, ['adds']);
    answer();
    await first;
    await toldTimes(told, 2);
    assert.deepEqual(told, ['adds', 'changes'], 'the writes that waited were not told together, as a change');
    answer();
    await Promise.all(waiting);
    // The kind is the next notice's alone: writes that only add are told as such again.
    const later = [notices.announce('adds'), notices.announce('adds')];
    answer();
    assert.deepEqual(told, ['adds', 'changes', 'adds']);
    await later[0];
    await toldTimes(told, 4);
    assert.deepEqual(told, ['adds', 'changes', 'adds', 'adds']);
    answer();
    await Promise.all(later);
  });

  it("count another worker's notices, a change unless it is known to have only added", () => {
    const { notices } = toldNotices();
    notices.hear('adds');
    notices.hear('changes');
    notices.hear(undefined);
    assert.deepEqual([notices.heard(), notices.heardChanges()], [3, 2]);
  });
});
