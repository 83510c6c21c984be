import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { rawExchange } from '../helpers/raw-socket.js';
import { createProduct, listAll } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const ROUTES = [
  { path: '/api/v1/shop/products', allow: 'GET, HEAD, OPTIONS' },
  { path: '/api/v1/shop/product/1', allow: 'GET, HEAD, OPTIONS' },
  { path: '/api/v1/shop/product/', allow: 'POST, OPTIONS' },
  { path: '/api/v2/shop/products', allow: 'GET, HEAD, OPTIONS' },
  { path: '/healthz', allow: 'GET, HEAD, OPTIONS' },
  { path: '/readyz', allow: 'GET, HEAD, OPTIONS' },
  // The page, the API reference and the contract answer like the API's paths.
  ...['/', '/assets/style.css', '/docs', '/docs/static/index.html', '/openapi.json', '/docs/API.md'].map((path) => ({ path, allow: 'GET, HEAD, OPTIONS' })),
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
          assert.equal(res.headers['access-control-allow-headers'], 'Content-Type, Idempotency-Key, Last-Event-ID');
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

  it('answers CONNECT like any refused method: 405 with Allow, or 404 where there is no route, then closes', async () => {
    const connect = async (target: string) => {
      const raw = await rawExchange(ctx.server.url, `CONNECT ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: connect-${target.length}\r\n\r\n`);
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      const lines = head.toLowerCase().split('\r\n');
      return { status: Number(lines[0]!.split(' ')[1]), lines, body: JSON.parse(body) as { status: number; detail: string } };
    };
    for (const { path, allow } of ROUTES) {
      const answer = await connect(path);
      assert.equal(answer.status, 405, path);
      assert.ok(answer.lines.includes(`allow: ${allow.toLowerCase()}`), path);
      assert.ok(answer.lines.includes('access-control-allow-origin: *'));
      assert.ok(answer.lines.includes(`x-request-id: connect-${path.length}`));
      assert.ok(answer.lines.includes('connection: close'));
      assert.equal(answer.body.detail, `CONNECT is not allowed here; this address answers ${allow}.`);
    }
    // This service is no proxy: a tunnel's target names nothing here.
    for (const target of ['/api/v1/nothing', 'shop.example:443']) {
      const answer = await connect(target);
      assert.equal(answer.status, 404, target);
      assert.equal(answer.body.detail, `There is nothing at CONNECT ${target}.`);
    }
    assert.equal((await send(`${ctx.server.url}/healthz`)).status, 200);
  });

  it('answers a CONNECT pipelined behind other requests after their answers, and serves on', async () => {
    const product = await createProduct(ctx.server.url);
    const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    for (const ahead of [[get('/healthz')], [get(`/api/v1/shop/product/${product.pk}`), get('/healthz')]]) {
      // One write: the CONNECT's head arrives while the answers ahead of it are still owed.
      const raw = await rawExchange(ctx.server.url, `${ahead.join('')}CONNECT /api/v1/shop/products HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      const statuses = [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
      assert.deepEqual(statuses, [...ahead.map(() => 200), 405], raw);
    }
    assert.equal((await send(`${ctx.server.url}/healthz`)).status, 200);
  });

  it('answers a request asking to switch protocols as any request, and ends the connection after it', async () => {
    const product = await createProduct(ctx.server.url);
    const path = `/api/v1/shop/product/${product.pk}`;
    for (const upgrade of ['Connection: Upgrade\r\nUpgrade: websocket', 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA']) {
      // Behind it in the same write, a request Node's parser will not read: the close says so at once,
      // instead of the connection idling until its limit (rawExchange fails on 5 s of silence).
      const raw = await rawExchange(ctx.server.url, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${upgrade}\r\n\r\nGET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      assert.match(raw, /^HTTP\/1\.1 200 /, upgrade);
      assert.match(raw, /\r\nconnection: close\r\n/i, upgrade);
      assert.match(raw, new RegExp(`"pk":${product.pk}`));
    }
    // Twice, so that the second finds the product's answer kept.
    for (let i = 0; i < 2; i += 1) {
      const answer = await send(`${ctx.server.url}${path}`, { headers: { Connection: 'Upgrade', Upgrade: 'websocket' } });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.connection, 'close');
    }
  });

  it('answers OPTIONS on a path that is no route with 404', async () => {
    const res = await send(`${ctx.server.url}/api/v1/nothing`, { method: 'OPTIONS' });
    assert.equal(res.status, 404);
  });
});

describe('configured CORS origins', () => {
  const testStore = sqlite;
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

  /** The headers every answer carries, as one answer path wrote them (names in lower case). */
  const everyAnswer = (headers: Record<string, string | string[] | undefined>) => ({
    id: headers['x-request-id'],
    vary: headers['vary'],
    origin: headers['access-control-allow-origin'],
    exposed: headers['access-control-expose-headers'],
  });
  const expected = (id: string, origin: string | undefined) => ({
    id,
    vary: 'Origin',
    origin,
    exposed: 'Location, ETag, X-Request-Id, Retry-After, Idempotent-Replayed',
  });
  /** The head of an answer written to a raw socket, as node:http would give its headers. */
  const headersOf = (raw: string): Record<string, string> =>
    Object.fromEntries(raw.split('\r\n\r\n')[0]!.split('\r\n').slice(1).map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }));

  it('gives every answer the same id, Vary, origin and exposed headers, whichever path writes it', async () => {
    for (const [origin, allowed] of [['https://till.example', 'https://till.example'], ['https://evil.example', undefined]] as const) {
      const headers = { Origin: origin, 'X-Request-Id': 'till-7' };
      // A route, Fastify's not-found, and a path the router cannot decode (refused before any hook).
      for (const path of ['/healthz', '/api/v1/nothing', '/api/v1/shop/product/%ZZ']) {
        const res = await send(`${server.url}${path}`, { headers });
        assert.deepEqual(everyAnswer(res.headers), expected('till-7', allowed), `${path} from ${origin}`);
      }
      // What Node's HTTP parser refuses is answered on the socket itself.
      const raw = await rawExchange(server.url, `GET / HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nX-Request-Id: till-7\r\nBad Header: x\r\n\r\n`);
      assert.match(raw, /^HTTP\/1\.1 400 /);
      assert.deepEqual(everyAnswer(headersOf(raw)), expected('till-7', allowed), `parser refusal from ${origin}`);
    }
  });

  it('gives a parser refusal a new request id where the caller sent none or an insane one', async () => {
    for (const idLine of ['', 'X-Request-Id: a b\r\n']) {
      const raw = await rawExchange(server.url, `GET / HTTP/1.1\r\nHost: x\r\n${idLine}Bad Header: x\r\n\r\n`);
      assert.match(headersOf(raw)['x-request-id'] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, idLine);
      assert.equal(headersOf(raw)['access-control-allow-origin'], undefined);
    }
  });
});
