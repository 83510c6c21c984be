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

  it('while other requests are answered, lets the burst go at once and then holds the next piece back', async () => {
    let answered = 0;
    const pace = new CatchUpPace({ share: 0.5, burstMs: 2_000, answered: () => ++answered });
    // Pieces of a second at half the time take 2 s each; the burst (2 s of sending) pays for 4 s. The
    // fourth is then held some 2 s: two hundred times what the pieces before took to be told here.
    for (let i = 0; i < 3; i++) {
      assert.equal(await atOnce(pace.ready()), true, `piece ${i} of the burst waited`);
      pace.spent(1_000);
    }
    assert.equal(await atOnce(pace.ready()), false, 'the piece past the burst went at once');
  });

  it('forgets what went while the worker was quiet: the burst goes at once when other requests are answered again', async () => {
    let answered = 0;
    let busy = true;
    const pace = new CatchUpPace({ share: 0.1, burstMs: 100, answered: () => (busy ? ++answered : answered) });
    assert.equal(await atOnce(pace.ready()), true);
    pace.spent(100);
    busy = false;
    // No answer since: the worker counts as busy a moment longer (100 ms), then as quiet.
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (let i = 0; i < 5; i++) {
      assert.equal(await atOnce(pace.ready()), true, `quiet piece ${i} waited`);
      pace.spent(100);
    }
    busy = true;
    for (let i = 0; i < 2; i++) {
      assert.equal(await atOnce(pace.ready()), true, `piece ${i} of the burst once busy again waited for the quiet ones`);
      pace.spent(100);
    }
    assert.equal(await atOnce(pace.ready()), false);
  });
});
