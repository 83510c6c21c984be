import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { TIMEOUTS } from '../../src/http/guards/limits.js';
import { startServer, type RunningServer } from '../helpers/server.js';

interface Trickle {
  /** Milliseconds from the first byte until the server closed the connection. */
  readonly closedAfterMs: number;
  readonly answer: string;
}

/** Sends `first`, then `drip` once a second, until the server closes the connection. */
function trickle(url: string, first: string, drip: string): Promise<Trickle> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.write(first));
    const timer = setInterval(() => socket.writable && socket.write(drip), 1000);
    const limit = setTimeout(() => socket.destroy(new Error('never closed')), 60_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(limit);
      const closedAfterMs = performance.now() - started;
      if (closedAfterMs >= 60_000) reject(new Error('the server never closed the connection'));
      else resolve({ closedAfterMs, answer: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

// The limits do not depend on the database.
// They strike within half a second of the limit on a quiet machine (docs/OPERATIONS.md); here, no sooner
// than the limit, and before ten times the time a quiet machine takes past it has passed, however busy this one is.
describe('the time limits on slow clients', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ kind: 'sqlite', path: ':memory:' });
  });
  after(() => server.stop());

  it(`answers 408 to headers still arriving after ${TIMEOUTS.headersMs / 1000} s, and to a body still arriving after ${TIMEOUTS.requestMs / 1000} s`, { timeout: 300_000 }, async () => {
    const [headers, body] = await Promise.all([
      trickle(server.url, 'GET /healthz HTTP/1.1\r\nHost: shop.example\r\n', 'X-Slow: 1\r\n'),
      trickle(
        server.url,
        'POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n',
        ' ',
      ),
    ]);
    assert.match(headers.answer, /^HTTP\/1\.1 408 /);
    assert.ok(headers.closedAfterMs >= TIMEOUTS.headersMs - 100 && headers.closedAfterMs < TIMEOUTS.headersMs + 5_000, `headers: closed after ${Math.round(headers.closedAfterMs)} ms`);
    assert.ok(body.closedAfterMs >= TIMEOUTS.requestMs - 100 && body.closedAfterMs < TIMEOUTS.requestMs + 5_000, `body: closed after ${Math.round(body.closedAfterMs)} ms`);
  });
});
