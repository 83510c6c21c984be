import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { listAll } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { STORES } from '../helpers/stores.js';

const ROUTES = [
  { path: '/api/v1/shop/products', allow: 'GET, HEAD, OPTIONS' },
  { path: '/api/v1/shop/product/1', allow: 'GET, HEAD, OPTIONS' },
  { path: '/api/v1/shop/product/', allow: 'POST, OPTIONS' },
  { path: '/api/v2/shop/products', allow: 'GET, HEAD, OPTIONS' },
  { path: '/healthz', allow: 'GET, HEAD, OPTIONS' },
  { path: '/readyz', allow: 'GET, HEAD, OPTIONS' },
];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE'];

describeEachStore('methods and CORS', (ctx) => {
  for (const { path, allow } of ROUTES) {
    for (const trailing of [false, true]) {
      const url = trailing ? (path.endsWith('/') ? path.slice(0, -1) : `${path}/`) : path;

      it(`answers the CORS preflight on OPTIONS ${url}, with or without Origin`, async () => {
        for (const headers of [{}, { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST' }] as Array<Record<string, string>>) {
          const res = await send(`${ctx.server.url}${url}`, { method: 'OPTIONS', headers });
          assert.equal(res.status, 200);
          assert.equal(res.headers['access-control-allow-origin'], '*');
          assert.equal(res.headers['access-control-allow-methods'], 'GET, POST, OPTIONS');
          assert.equal(res.headers['access-control-allow-headers'], 'Content-Type, Idempotency-Key');
          assert.equal(res.text, '');
        }
      });

      for (const method of METHODS.filter((m) => !allow.split(', ').includes(m))) {
        it(`answers 405 with Allow to ${method} ${url}, whatever the body, and changes nothing`, async () => {
          const before = await listAll(ctx.server.url);
          const res = await send(`${ctx.server.url}${url}`, {
            method,
            headers: { 'Content-Type': 'text/plain' },
            body: method === 'TRACE' ? undefined : 'not json',
          });
          assert.equal(res.status, 405);
          assert.equal(res.headers.allow, allow);
          assert.equal(res.headers['access-control-allow-origin'], '*');
          if (method !== 'HEAD') {
            assert.deepEqual(res.json, {
              type: 'about:blank',
              title: 'Method Not Allowed',
              status: 405,
              detail: `${method} is not allowed here; this address answers ${allow}.`,
            });
          }
          assert.deepEqual(await listAll(ctx.server.url), before);
        });
      }
    }
  }

  it('answers OPTIONS on a path that is no route with 404', async () => {
    const res = await send(`${ctx.server.url}/api/v1/nothing`, { method: 'OPTIONS' });
    assert.equal(res.status, 404);
  });
});

describe('configured CORS origins', () => {
  const testStore = STORES[0]!;
  let server: RunningServer;
  before(async () => {
    server = await startFreshServer(testStore, { CORS_ORIGIN: 'https://shop.example,https://till.example' });
  });
  after(() => server.stop());

  it('echoes an allowed origin and varies on Origin', async () => {
    const res = await send(`${server.url}/api/v1/shop/products`, { headers: { Origin: 'https://till.example' } });
    assert.equal(res.headers['access-control-allow-origin'], 'https://till.example');
    assert.match(String(res.headers.vary), /Origin/);
  });

  it('lets a cross-origin page read Location, ETag, X-Request-Id and Retry-After', async () => {
    const res = await send(`${server.url}/api/v1/shop/products`, { headers: { Origin: 'https://till.example' } });
    assert.equal(res.headers['access-control-expose-headers'], 'Location, ETag, X-Request-Id, Retry-After, Idempotent-Replayed');
  });

  it('gives no allow-origin to another origin', async () => {
    const res = await send(`${server.url}/api/v1/shop/products`, { headers: { Origin: 'https://evil.example' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });
});
