import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OVERLOAD } from '../../src/http/overload.js';
import { send } from '../helpers/http.js';
import { startServer, type RunningServer } from '../helpers/server.js';

/** Keeps the event loop busy `busyMs` out of every `everyMs`, as a flood of requests would. */
function loadEventLoop(busyMs: number, everyMs: number): () => void {
  const timer = setInterval(() => {
    const until = performance.now() + busyMs;
    while (performance.now() < until) {
      // Busy on purpose: this stands for more work than the process can do.
    }
  }, everyMs);
  return () => clearInterval(timer);
}

// Overload depends on the process, not on the database.
describe('a service offered more than it can serve', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ kind: 'sqlite', path: ':memory:' });
  });
  after(() => server.stop());

  it('answers at once with a 503 problem and Retry-After, and keeps answering its liveness probe', async () => {
    const stop = loadEventLoop(OVERLOAD.maxEventLoopDelayMs * 1.5, 50);
    try {
      await sleep(OVERLOAD.sampleMs * 3);
      const res = await send(`${server.url}/api/v1/shop/products`);
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], String(OVERLOAD.retryAfterSeconds));
      assert.deepEqual(res.json, {
        type: 'about:blank',
        title: 'Service Unavailable',
        status: 503,
        detail: 'The service is overloaded right now; try again shortly.',
      });
      assert.equal((await send(`${server.url}/healthz`)).status, 200);
    } finally {
      stop();
    }
    await sleep(OVERLOAD.sampleMs * 3);
    assert.equal((await send(`${server.url}/api/v1/shop/products`)).status, 200);
  });
});
