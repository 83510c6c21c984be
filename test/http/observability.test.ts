import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { type AddressInfo, connect } from 'node:net';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { TIMEOUTS } from '../../src/http/guards/limits.js';
import { loggerOptions } from '../../src/http/observability/logging.js';
import { openStore } from '../../src/storage/open-store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { rawExchange } from '../helpers/raw-socket.js';
import { uniqueBarcode } from '../helpers/products.js';
import { startFreshServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describeEachStore('request ids and metrics', (ctx) => {
  it('returns a new id on every answer, errors included', async () => {
    const ok = await send(`${ctx.server.url}/api/v2/shop/products`);
    const missing = await send(`${ctx.server.url}/nowhere`);
    assert.match(String(ok.headers['x-request-id']), UUID);
    assert.match(String(missing.headers['x-request-id']), UUID);
    assert.notEqual(ok.headers['x-request-id'], missing.headers['x-request-id']);
  });

  it("keeps a caller's sane id and replaces an odd one", async () => {
    const kept = await send(`${ctx.server.url}/api/v2/shop/products`, { headers: { 'X-Request-Id': 'lb-7f3a.42:1' } });
    assert.equal(kept.headers['x-request-id'], 'lb-7f3a.42:1');
    for (const odd of ['a b', 'x'.repeat(129), '"};{']) {
      const replaced = await send(`${ctx.server.url}/api/v2/shop/products`, { headers: { 'X-Request-Id': odd } });
      assert.match(String(replaced.headers['x-request-id']), UUID, odd);
    }
  });

  it('serves Prometheus metrics by route and status', async (t) => {
    // A server of its own: the counts below are exact.
    const server = await startFreshServer(ctx.testStore);
    t.after(() => server.stop());
    await postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify({ name: 'Counted', barcode: uniqueBarcode(), price: '1.00' }));
    await postJson(`${server.url}/api/v1/shop/product/`, '{"name":1}');
    await send(`${server.url}/random/${Date.now()}`);
    // Answered before any route or hook: a pk longer than the router takes, and an expectation refused.
    assert.equal((await send(`${server.url}/api/v1/shop/product/${'9'.repeat(201)}`)).status, 404);
    const { port } = new URL(server.url);
    assert.match(await rawExchange(server.url, `GET /api/v1/shop/products HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nExpect: foo\r\n\r\n`), /^HTTP\/1\.1 417 /);
    const res = await send(`${server.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(res.text, /^http_requests_total\{method="POST",route="\/api\/v1\/shop\/product\/",status="201"\} 1$/m);
    assert.match(res.text, /^http_requests_total\{method="POST",route="\/api\/v1\/shop\/product\/",status="400"\} 1$/m);
    assert.match(res.text, /^http_requests_total\{method="GET",route="unmatched",status="404"\} 2$/m);
    assert.match(res.text, /^http_requests_total\{method="GET",route="unmatched",status="417"\} 1$/m);
    assert.match(res.text, /^http_request_duration_seconds_bucket\{le="\+Inf",method="POST",route="\/api\/v1\/shop\/product\/",status="201"\} 1$/m);
    assert.match(res.text, /^process_resident_memory_bytes \d+/m);
    // A pooled database reports its pool; SQLite, one connection and no pool, reports none.
    if (ctx.testStore.kind === 'sqlite') assert.doesNotMatch(res.text, /^db_pool_connections\{/m);
    else assert.match(res.text, /^db_pool_connections\{state="total"\} [1-9]\d*$/m);
    // SQLite reads other processes' commits off the file: no connection listens for them.
    if (ctx.testStore.kind === 'sqlite') assert.doesNotMatch(res.text, /^catalogue_change_listener/m);
    else assert.match(res.text, /^catalogue_change_listener_lost_total 0$/m);
    assert.equal((await send(`${server.url}/metrics`, { method: 'DELETE' })).status, 405);
  });
});

describe('logs', () => {
  it('are JSON lines with the request id, and never show the token', async () => {
    const token = 'log-secret-token-0123456789';
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter((line) => line !== ''));
        done();
      },
    });
    const { location, drop } = await sqlite.create();
    const store = await openStore(location);
    const app = await buildApp({ config: loadConfig({ API_TOKEN: token }), store, logger: { ...loggerOptions('info'), stream } });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const body = JSON.stringify({ name: 'Logged', barcode: uniqueBarcode(), price: '1.00' });
      const created = await postJson(`${url}/api/v1/shop/product/`, body, { Authorization: `Bearer ${token}`, 'X-Request-Id': 'trace-1' });
      assert.equal(created.status, 201);
      await postJson(`${url}/api/v1/shop/product/`, body, { Authorization: `Bearer not-${token}` });
    } finally {
      await app.close();
      await store.close();
      await drop();
    }
    const entries = lines.map((line) => JSON.parse(line) as { reqId?: string; msg?: string });
    assert.ok(entries.some((e) => e.reqId === 'trace-1' && e.msg === 'request completed'), lines.join('\n'));
    assert.doesNotMatch(lines.join('\n'), new RegExp(token));
  });
});

describe('the request log', () => {
  it('writes one line a request with its fields, at debug the line of its arrival too, and a line for a request whose client left before its answer', async () => {
    const lines: Record<string, unknown>[] = [];
    let heard: ((line: Record<string, unknown>) => void) | undefined;
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString('utf8').split('\n')) {
          if (text === '') continue;
          const line = JSON.parse(text) as Record<string, unknown>;
          lines.push(line);
          heard?.(line);
        }
        done();
      },
    });
    const lineOf = (id: string, msg: string): Promise<Record<string, unknown>> => {
      const found = lines.find((line) => line.reqId === id && line.msg === msg);
      if (found !== undefined) return Promise.resolve(found);
      // 30 s: a bound for a line that never comes, not a figure of speed.
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "${msg}" line for ${id} in 30 s:\n${lines.map((line) => JSON.stringify(line)).join('\n')}`)), 30_000);
        heard = (line) => {
          if (line.reqId !== id || line.msg !== msg) return;
          clearTimeout(timer);
          resolve(line);
        };
      });
    };
    const { location, drop } = await sqlite.create();
    const store = await openStore(location);
    const app = await buildApp({ config: loadConfig({}), store, logger: { ...loggerOptions('debug'), stream } });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      const url = `http://127.0.0.1:${port}`;
      const body = JSON.stringify({ name: 'Logged once', barcode: uniqueBarcode(), price: '1.00' });
      assert.equal((await postJson(`${url}/api/v1/shop/product/`, body, { 'X-Request-Id': 'one-1', 'User-Agent': 'till/7' })).status, 201);
      const completed = await lineOf('one-1', 'request completed');
      assert.deepEqual(lines.filter((line) => line.reqId === 'one-1').map((line) => line.msg), ['incoming request', 'request completed']);
      assert.deepEqual(completed.req, { method: 'POST', url: '/api/v1/shop/product/', host: `127.0.0.1:${port}`, remoteAddress: '127.0.0.1', userAgent: 'till/7' });
      assert.deepEqual(completed.res, { statusCode: 201 });
      assert.equal(typeof completed.responseTime, 'number');
      assert.equal(completed.level, 30);

      // A create whose client goes away with half its body sent: no answer is finished, and yet a line.
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.write(`POST /api/v1/shop/product/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Request-Id: gone-1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
      await lineOf('gone-1', 'incoming request');
      socket.destroy();
      const aborted = await lineOf('gone-1', 'request aborted');
      assert.deepEqual(aborted.req, { method: 'POST', url: '/api/v1/shop/product/', host: `127.0.0.1:${port}`, remoteAddress: '127.0.0.1' });
      assert.equal(aborted.level, 30);

      // A change feed stream the client closes: one line, the aborted one, not Fastify's own beside it.
      const feed = connect(port, '127.0.0.1');
      feed.on('error', () => {});
      feed.write(`GET /api/v2/shop/changes HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Request-Id: feed-1\r\nAccept: text/event-stream\r\n\r\n`);
      await new Promise((resolve) => feed.once('data', resolve));
      feed.destroy();
      const feedLine = await lineOf('feed-1', 'request aborted');
      assert.deepEqual(feedLine.req, { method: 'GET', url: '/api/v2/shop/changes', host: `127.0.0.1:${port}`, remoteAddress: '127.0.0.1' });

      // Bytes Node's parser refuses: no route sees them, and yet their answer's id is in the log.
      const refusedAnswer = await rawExchange(url, 'GARBAGE\r\n\r\n');
      const refusedId = /^x-request-id: (\S+)\r$/im.exec(refusedAnswer)?.[1];
      assert.ok(refusedId !== undefined, refusedAnswer);
      const refused = await lineOf(refusedId, 'request refused');
      assert.deepEqual({ client: refused.client, res: refused.res, level: refused.level }, { client: { remoteAddress: '127.0.0.1' }, res: { statusCode: 400 }, level: 30 });

      // An expectation refused before any route sees the request: the line of a routed request.
      const expectation = await rawExchange(url, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Request-Id: expect-1\r\nUser-Agent: till/7\r\nExpect: foo\r\n\r\n`);
      assert.match(expectation, /^HTTP\/1\.1 417 /);
      const expected = await lineOf('expect-1', 'request completed');
      assert.deepEqual(expected.req, { method: 'GET', url: '/healthz', host: `127.0.0.1:${port}`, remoteAddress: '127.0.0.1', userAgent: 'till/7' });
      assert.deepEqual(expected.res, { statusCode: 417 });
      assert.equal(typeof expected.responseTime, 'number');

      // A path the router refuses (a pk longer than it takes) before any hook: the line of a routed request.
      const longPath = `/api/v1/shop/product/${'9'.repeat(201)}`;
      assert.equal((await send(`${url}${longPath}`, { headers: { 'X-Request-Id': 'long-1', 'User-Agent': 'till/7' } })).status, 404);
      const long = await lineOf('long-1', 'request completed');
      assert.deepEqual(long.req, { method: 'GET', url: longPath, host: `127.0.0.1:${port}`, remoteAddress: '127.0.0.1', userAgent: 'till/7' });
      assert.deepEqual(long.res, { statusCode: 404 });
    } finally {
      await app.close();
      await store.close();
      await drop();
    }
    assert.equal(lines.filter((line) => line.reqId === 'gone-1' && line.msg === 'request completed').length, 0);
    assert.deepEqual(lines.filter((line) => line.reqId === 'feed-1' && Number(line.level) >= 30).map((line) => line.msg), ['request aborted']);
  });
});

describe('timeouts', () => {
  it('bound how long a slow client can hold a connection', async (t) => {
    const server = await startFreshServer(sqlite, {}, { inProcess: true });
    t.after(() => server.stop());
    const http = server.app.server;
    assert.deepEqual(
      { headers: http.headersTimeout, request: http.requestTimeout, idle: http.timeout, keepAlive: http.keepAliveTimeout },
      { headers: TIMEOUTS.headersMs, request: TIMEOUTS.requestMs, idle: TIMEOUTS.idleSocketMs, keepAlive: TIMEOUTS.keepAliveMs },
    );
    assert.ok(TIMEOUTS.headersMs < TIMEOUTS.requestMs && TIMEOUTS.requestMs <= TIMEOUTS.idleSocketMs);
  });
});
