import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OVERLOAD } from '../../src/http/overload.js';
import { send, type RawResponse } from '../helpers/http.js';
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

/** Asks for the product list until it answers `status`, for at most 10 s (the machine may be busy). */
async function statusWithin(url: string, status: number): Promise<RawResponse> {
  const until = performance.now() + 10_000;
  for (;;) {
    const res = await send(`${url}/api/v1/shop/products`);
    if (res.status === status || performance.now() > until) return res;
    await sleep(OVERLOAD.sampleMs);
  }
}

// Overload depends on the process, not on the database.
describe('a service offered more than it can serve', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ kind: 'sqlite', path: ':memory:' }, {}, { refuseWhenOverloaded: true });
  });
  after(() => server.stop());

  it('answers at once with a 503 problem and Retry-After, and keeps answering its liveness probe', async () => {
    const stop = loadEventLoop(OVERLOAD.maxEventLoopDelayMs * 1.5, 50);
    try {
      await sleep(OVERLOAD.sampleMs * 3);
      const res = await statusWithin(server.url, 503);
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
    assert.equal((await statusWithin(server.url, 200)).status, 200);
  });
});
