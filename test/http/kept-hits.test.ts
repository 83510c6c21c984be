import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { setTimeout } from 'node:timers/promises';
import { it, type TestContext } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { describeEachStore, type StoreTestContext } from '../helpers/each-store.js';
import { send, type RawResponse } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';
import { rawExchange } from '../helpers/raw-socket.js';
import { startServer, type RunningServer, type ServerOptions } from '../helpers/server.js';
import { loggerOptions } from '../../src/http/observability/logging.js';

// Answers kept by the routes are written from the server's request listener, before Fastify (src/http/answers/kept-hits.ts).
// These servers run in the test's process without request logging, as the service does at LOG_LEVEL=warn,
// so that the early path is on whatever TEST_WORKERS says.

/** Headers that differ between any two answers: when, and which request. */
const PER_ANSWER = new Set(['date', 'x-request-id']);

/** Rate limit headers that differ from one request to the next: how many remain, and the seconds left. */
const LIMIT_FIGURES = new Set(['x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']);

describeEachStore('kept answers written before routing', { env: false }, (ctx) => {
  it('answers a kept product, page and list before routing with the status, headers and bytes the route gives', async (t) => {
    const server = await serverFor(ctx, t);
    const product = await createProduct(server.url);
    // Pages of 100 over 20 products are over 1 KB: they are compressed, and say Vary: Accept-Encoding.
    for (let i = 0; i < 19; i += 1) await createProduct(server.url);
    await untilNoticesHeard(server);
    const gzip = { 'Accept-Encoding': 'gzip' };
    for (const [path, headers] of [
      [`/api/v1/shop/product/${product.pk}`, {}],
      ['/api/v2/shop/products?limit=100', {}],
      ['/api/v2/shop/products?limit=100', gzip],
      ['/api/v2/shop/products?limit=2&offset=3', {}],
      ['/api/v1/shop/products', {}],
      ['/api/v1/shop/products', gzip],
      [`/api/v1/shop/products?barcode=${product.barcode}`, {}],
    ] as const) {
      const before = await answeredEarly(server);
      // The first is read and kept by the route; the second finds it kept.
      const routed = await send(`${server.url}${path}`, { headers });
      const early = await send(`${server.url}${path}`, { headers });
      assert.equal(await answeredEarly(server), before + 1, `${path} was answered before routing`);
      assert.equal(early.status, 200, path);
      assert.deepEqual(comparable(early), comparable(routed), path);
      assert.deepEqual(early.bytes, routed.bytes, path);
      if (headers === gzip) {
        assert.equal(early.headers['content-encoding'], 'gzip');
        assert.ok(JSON.parse(gunzipSync(early.bytes).toString('utf8')));
      }
      assert.match(String(early.headers['x-request-id']), /^[0-9a-f-]{36}$/);

      const notModified = await send(`${server.url}${path}`, { headers: { ...headers, 'If-None-Match': routed.headers.etag! } });
      assert.equal(notModified.status, 304, path);
      assert.equal(notModified.text, '');
      assert.equal(notModified.headers.etag, routed.headers.etag);
      assert.equal(notModified.headers['content-length'], undefined);
      assert.equal(await answeredEarly(server), before + 2, `${path}'s 304 was answered before routing`);
    }
    // The query of a product's address selects nothing: the product's kept answer is its answer.
    const withQuery = await send(`${server.url}/api/v1/shop/product/${product.pk}?any=thing`);
    assert.deepEqual(withQuery.json, product);
    const metrics = (await send(`${server.url}/metrics`)).text;
    assert.match(metrics, /^http_requests_total\{method="GET",route="\/api\/v1\/shop\/product\/:pk",status="304"\} 1$/m);
    assert.match(metrics, /^http_request_duration_seconds_count\{method="GET",route="\/api\/v2\/shop\/products",status="200"\} 6$/m);
  });

  it('carries the request id a caller gives and the CORS headers of the origin that asks', async (t) => {
    const server = await serverFor(ctx, t, { CORS_ORIGIN: 'https://shop.example' });
    const product = await createProduct(server.url);
    await untilNoticesHeard(server);
    const url = `${server.url}/api/v1/shop/product/${product.pk}`;
    await send(url);
    const before = await answeredEarly(server);
    const allowed = await send(url, { headers: { Origin: 'https://shop.example', 'X-Request-Id': 'till-7.scan:42' } });
    const other = await send(url, { headers: { Origin: 'https://elsewhere.example', 'X-Request-Id': 'not sane\u00e9' } });
    assert.equal(await answeredEarly(server), before + 2);
    assert.equal(allowed.headers['x-request-id'], 'till-7.scan:42');
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://shop.example');
    assert.equal(allowed.headers.vary, 'Origin');
    assert.match(String(other.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    assert.equal(other.headers.vary, 'Origin');
    // A page long enough to compress varies by both.
    for (let i = 0; i < 20; i += 1) await createProduct(server.url);
    await untilNoticesHeard(server);
    await send(`${server.url}/api/v2/shop/products`);
    const beforePage = await answeredEarly(server);
    const page = await send(`${server.url}/api/v2/shop/products`, { headers: { Origin: 'https://shop.example' } });
    assert.equal(page.headers.vary, 'Origin, Accept-Encoding');
    assert.equal(await answeredEarly(server), beforePage + 1);
  });

  it('leaves to the routes every request it could not answer as they would', async (t) => {
    const server = await serverFor(ctx, t);
    const product = await createProduct(server.url);
    const url = `${server.url}/api/v1/shop/product/${product.pk}`;
    await send(url);
    await send(`${server.url}/api/v2/shop/products?limit=1`);
    const before = await answeredEarly(server);
    const { port } = new URL(server.url);
    const path = `/api/v1/shop/product/${product.pk}`;

    assert.equal((await send(url, { method: 'HEAD' })).status, 200);
    // A body on a GET: the route reads no body, but the connection must be kept in step.
    assert.equal((await send(url, { body: 'hello' })).status, 200);
    assert.equal((await send(url, { headers: { Expect: '100-continue' } })).status, 200);
    assert.equal((await send(`${url}/`)).status, 200);
    assert.equal((await send(`${server.url}/api/v1/shop/product/%31`)).status, 200);
    // Longer than the router takes a parameter: no route's, a 404, however it reads as a pk.
    assert.equal((await send(`${server.url}/api/v1/shop/product/${'0'.repeat(200)}${product.pk}`)).status, 404);
    assert.equal((await send(`${server.url}/api/v1/shop/product/${'0'.repeat(199)}${product.pk}`)).status, 200);
    // A page's links name the host a proxy may have said: the route decides.
    const forwarded = await send(`${server.url}/api/v2/shop/products?limit=1`, { headers: { 'X-Forwarded-Host': 'shop.example' } });
    assert.equal(forwarded.status, 200);
    // Refused by the Host check, as through the route.
    const twoHosts = await rawExchange(server.url, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nHost: other.example\r\nConnection: close\r\n\r\n`);
    assert.match(twoHosts, /^HTTP\/1\.1 400 /);
    assert.match(twoHosts, /more than one Host header/);
    const badHost = await send(url, { headers: { Host: 'bad host' } });
    assert.equal(badHost.status, 400);
    // HTTP/1.0 without Host: links would use the local address; answered by the route.
    const old = await rawExchange(server.url, `GET ${path} HTTP/1.0\r\n\r\n`);
    assert.match(old, /^HTTP\/1\.1 200 /);
    // An absolute-form target names its host itself.
    const absolute = await rawExchange(server.url, `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    assert.match(absolute, /^HTTP\/1\.1 200 /);
    // The one above at 200 characters is a product's address like any other.
    assert.equal(await answeredEarly(server), before + 1, 'none of the others was answered before routing');
  });

  it('serves a read pipelined behind a create after the create, with the product', async (t) => {
    const server = await serverFor(ctx, t);
    await send(`${server.url}/api/v1/shop/products`);
    const { port } = new URL(server.url);
    const body = JSON.stringify({ name: 'Pipelined', barcode: '4006381333931', price: '1.00' });
    const create = `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const list = `GET /api/v1/shop/products HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`;
    const answers = await rawExchange(server.url, create + list);
    const [, second = ''] = answers.split(/(?=HTTP\/1\.1 )/);
    assert.match(second, /^HTTP\/1\.1 200 /);
    assert.match(second, /"name":"Pipelined"/);
  });

  it('answers requests pipelined behind a kept answer before refusing the bytes after them that are no request', async (t) => {
    const server = await serverFor(ctx, t);
    const products = [await createProduct(server.url), await createProduct(server.url)];
    await untilNoticesHeard(server);
    const path = (pk: number): string => `/api/v1/shop/product/${pk}`;
    await send(`${server.url}${path(products[0]!.pk)}`);
    const get = (pk: number): string => `GET ${path(pk)} HTTP/1.1\r\nHost: x\r\n\r\n`;
    // One write: the first is answered at once, before routing, while the others are still read.
    const raw = await rawExchange(server.url, `${get(products[0]!.pk)}${get(products[1]!.pk)}${get(products[0]!.pk)}GARBAGE\r\n\r\n`);
    const statuses = [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
    assert.deepEqual(statuses, [200, 200, 200, 400], raw);
    assert.deepEqual([...raw.matchAll(/"pk":(\d+)/g)].map((match) => Number(match[1])), [products[0]!.pk, products[1]!.pk, products[0]!.pk]);
  });

  // One line a request at info; at debug, the line of its arrival before it, as for a routed request.
  for (const [level, messages] of [['info', ['request completed']], ['debug', ['incoming request', 'request completed']]] as const) {
    it(`logs a kept answer at LOG_LEVEL ${level} with the lines and fields of a routed one`, async (t) => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(...chunk.toString('utf8').split('\n').filter((line) => line !== ''));
          done();
        },
      });
      const server = await serverFor(ctx, t, {}, { logger: { ...loggerOptions(level), stream } });
      const product = await createProduct(server.url);
      await untilNoticesHeard(server);
      const url = `${server.url}/api/v1/shop/product/${product.pk}`;
      const headers = { 'User-Agent': 'till/7' };
      const routed = await send(url, { headers: { ...headers, 'X-Request-Id': 'routed-1' } });
      const before = await answeredEarly(server);
      const early = await send(url, { headers: { ...headers, 'X-Request-Id': 'early-1' } });
      const notModified = await send(url, { headers: { ...headers, 'X-Request-Id': 'early-2', 'If-None-Match': routed.headers.etag! } });
      assert.equal(await answeredEarly(server), before + 2, 'both were answered before routing');
      assert.equal(early.status, 200);
      assert.equal(notModified.status, 304);
      const routedLines = logLinesOf(lines, 'routed-1');
      assert.deepEqual(routedLines.map((line) => line.msg), messages);
      assert.deepEqual(routedLines.at(-1)!.req, { method: 'GET', url: `/api/v1/shop/product/${product.pk}`, host: new URL(server.url).host, remoteAddress: '127.0.0.1', userAgent: 'till/7' });
      assert.deepEqual(logLinesOf(lines, 'early-1'), routedLines);
      assert.deepEqual(logLinesOf(lines, 'early-2'), routedLines.map((line) => (line.res === undefined ? line : { ...line, res: { statusCode: 304 } })));
    });
  }

  it('counts a kept answer against RATE_LIMIT and refuses one over it with the routes\' own 429', async (t) => {
    const max = 5;
    const server = await serverFor(ctx, t, { RATE_LIMIT: `${max * 10}/minute` });
    const product = await createProduct(server.url);
    await untilNoticesHeard(server);
    const url = `${server.url}/api/v1/shop/product/${product.pk}`;
    // Another loopback address: a client of its own, whose count starts at 0.
    const client = { localAddress: '127.0.0.2' };
    const routed = await send(url, client);
    const before = await answeredEarly(server);
    const counted: RawResponse[] = [];
    for (let i = 1; i < max * 10; i += 1) counted.push(await send(url, client));
    assert.equal(await answeredEarly(server), before + max * 10 - 1, 'every one under the limit was answered before routing');
    assert.deepEqual(
      [routed, ...counted].map((answer) => answer.headers['x-ratelimit-remaining']),
      Array.from({ length: max * 10 }, (_, i) => String(max * 10 - 1 - i)),
    );
    for (const answer of counted) assert.deepEqual(comparable(answer, LIMIT_FIGURES), comparable(routed, LIMIT_FIGURES));
    // Over the limit: the kept answer's request and one no answer is kept for (another product) get the same refusal.
    const refused = await send(url, client);
    const refusedRouted = await send(`${server.url}/api/v1/shop/product/${product.pk + 1000}`, client);
    assert.equal(await answeredEarly(server), before + max * 10 - 1, 'the refusal was the routes\'');
    assert.equal(refused.status, 429);
    assert.deepEqual(comparable(refused, LIMIT_FIGURES), comparable(refusedRouted, LIMIT_FIGURES));
    assert.equal(refused.text.replace(/\d+/g, 'N'), refusedRouted.text.replace(/\d+/g, 'N'));
    for (const answer of [refused, refusedRouted]) {
      assert.match(String(answer.headers['retry-after']), /^\d+$/);
      assert.equal(answer.headers['x-ratelimit-remaining'], '0');
    }
    // Another client is not held back, and its kept answers are still answered before routing.
    assert.equal((await send(url)).status, 200);
    assert.equal(await answeredEarly(server), before + max * 10);
  });
});

/**
 * A server over a database of its own, in the test's process, stopped after the test. It is ready
 * once it answers kept lists before routing: on PostgreSQL
 * the change notices are listened for from the first read on, and hearing them begins a new generation
 * of kept answers.
 */
async function serverFor(ctx: StoreTestContext, t: TestContext, env: Record<string, string> = {}, options: ServerOptions = {}): Promise<RunningServer> {
  const { location } = await ctx.freshDatabase(t);
  const server = await startServer(location, env, { inProcess: true, ...options });
  t.after(() => server.stop());
  await untilNoticesHeard(server);
  return server;
}

/**
 * Waits until a kept list is answered before routing twice, 100 ms apart: on PostgreSQL the notices
 * of the creates just made arrive a moment after them, each beginning a new generation of kept answers.
 */
async function untilNoticesHeard(server: RunningServer): Promise<void> {
  let early = 0;
  for (let tries = 0; tries < 100 && early < 2; tries += 1) {
    const before = await answeredEarly(server);
    await send(`${server.url}/api/v1/shop/products?settled`);
    early = (await answeredEarly(server)) > before ? early + 1 : 0;
    await setTimeout(early === 0 ? 20 : 100);
  }
  if (early < 2) throw new Error('The server never answered a kept list before routing twice in a row.');
}

async function answeredEarly(server: RunningServer): Promise<number> {
  const { text } = await send(`${server.url}/metrics`);
  return Number(/^http_requests_answered_before_routing_total (\d+)$/m.exec(text)?.[1]);
}

/** An answer's status and headers, names in lower case, without those that differ on every answer. */
function comparable(answer: RawResponse, alsoLeftOut: ReadonlySet<string> = new Set()): { status: number; headers: Record<string, unknown> } {
  const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !PER_ANSWER.has(name) && !alsoLeftOut.has(name)));
  return { status: answer.status, headers };
}

/**
 * The log lines of one request, in order, without what differs on every line (time, and the request
 * id, which selects them) or every request (its response time, which must be a number).
 */
function logLinesOf(lines: readonly string[], id: string): Record<string, unknown>[] {
  return lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.reqId === id)
    .map((entry) => {
      const { time, reqId: _id, responseTime, ...rest } = entry;
      assert.equal(typeof time, 'number');
      if (rest.msg === 'request completed') assert.equal(typeof responseTime, 'number');
      return { keys: Object.keys(entry), ...rest };
    });
}
