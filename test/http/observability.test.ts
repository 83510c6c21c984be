import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { TIMEOUTS } from '../../src/http/guards/limits.js';
import { loggerOptions } from '../../src/http/observability/logging.js';
import { openStore } from '../../src/storage/open-store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
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
    const res = await send(`${server.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(res.text, /^http_requests_total\{method="POST",route="\/api\/v1\/shop\/product\/",status="201"\} 1$/m);
    assert.match(res.text, /^http_requests_total\{method="POST",route="\/api\/v1\/shop\/product\/",status="400"\} 1$/m);
    assert.match(res.text, /^http_requests_total\{method="GET",route="unmatched",status="404"\} 1$/m);
    assert.match(res.text, /^http_request_duration_seconds_bucket\{le="\+Inf",method="POST",route="\/api\/v1\/shop\/product\/",status="201"\} 1$/m);
    assert.match(res.text, /^process_resident_memory_bytes \d+/m);
    // A pooled database reports its pool; SQLite, one connection and no pool, reports none.
    if (ctx.testStore.kind === 'sqlite') assert.doesNotMatch(res.text, /^db_pool_connections\{/m);
    else assert.match(res.text, /^db_pool_connections\{state="total"\} [1-9]\d*$/m);
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
