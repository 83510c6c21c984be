import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OVERLOAD } from '../../src/http/guards/overload.js';
import { postJson, send, type RawResponse } from '../helpers/http.js';
import { passesWithin } from '../helpers/passes-within.js';
import { startServer, type RunningServer } from '../helpers/server.js';

/** Keeps the event loop busy `busyMs` out of every `everyMs`, as a flood of requests would. */
function loadEventLoop(busyMs: number, everyMs: number): () => void {
  const timer = setInterval(() => pause(busyMs), everyMs);
  return () => clearInterval(timer);
}

/** Keeps the event loop busy `ms` at a stretch. */
function pause(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy on purpose: this stands for more work than the process can do.
  }
}

/**
 * Asks for the product list until it answers `status`, for at most 60 s. Under the load below, the
 * process takes a sample of its lag only every two busy stretches (3 s) and answers a request only
 * between them, and the first sample may still average quieter time in: a few seconds on a quiet
 * machine, more on a busy one. Sixty bound a refusal that never comes.
 */
async function statusWithin(url: string, status: number): Promise<RawResponse> {
  let res: RawResponse | undefined;
  await passesWithin(
    60_000,
    async () => {
      res = await send(`${url}/api/v1/shop/products`);
      assert.equal(res.status, status, res.text);
    },
    OVERLOAD.sampleMs,
  );
  return res!;
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
      const res = await statusWithin(server.url, 503);
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
    await statusWithin(server.url, 200);
  });
});

describe('a service whose start paused its event loop longer than the limit', () => {
  let server: RunningServer;
  before(async () => {
    // Two pauses with a turn of the loop between them, so that a whole sample holds nothing but a pause.
    const slowStart = async (): Promise<void> => {
      for (let n = 0; n < 2; n++) {
        pause(OVERLOAD.maxEventLoopDelayMs * 1.5);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    server = await startServer({ kind: 'sqlite', path: ':memory:' }, {}, { refuseWhenOverloaded: true, beforeListen: slowStart });
  });
  after(() => server.stop());

  it('serves its first requests: the pauses of starting are no overload; an overload after them is refused', async () => {
    const created = await postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify({ name: 'First', barcode: '4006381333931', price: '1.00' }));
    assert.equal(created.status, 201, created.text);
    const { pk } = created.json as { pk: number };
    assert.equal((await send(`${server.url}/api/v1/shop/product/${pk}`)).status, 200);
    assert.equal((await send(`${server.url}/api/v1/shop/products`)).status, 200);
    // The start's allowance ends: the same service refuses once it is overloaded.
    const stop = loadEventLoop(OVERLOAD.maxEventLoopDelayMs * 1.5, 50);
    try {
      await statusWithin(server.url, 503);
    } finally {
      stop();
    }
    await statusWithin(server.url, 200);
  });
});
