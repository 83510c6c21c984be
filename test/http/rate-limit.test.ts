import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';
import { startFreshServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

describe('RATE_LIMIT', () => {
  it('answers 429 with Retry-After once a client goes over the limit', async () => {
    const server = await startFreshServer(sqlite, { RATE_LIMIT: '3/minute' });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await send(`${server.url}/api/v2/shop/products`)).status);
      assert.deepEqual(statuses, [200, 200, 200]);
      const refused = await send(`${server.url}/api/v1/shop/products`);
      assert.equal(refused.status, 429);
      assert.match(refused.headers['content-type'] ?? '', /^application\/problem\+json/);
      const retryAfter = Number(refused.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${refused.headers['retry-after']}`);
      assert.deepEqual(Object.keys(refused.json as object).sort(), ['detail', 'status', 'title', 'type']);
      assert.equal((refused.json as { status: number }).status, 429);
      // Monitoring keeps working while clients are held back.
      assert.equal((await send(`${server.url}/metrics`)).status, 200);
      assert.equal((await send(`${server.url}/readyz`)).status, 200);
      assert.equal((await send(`${server.url}/healthz`)).status, 200);
    } finally {
      await server.stop();
    }
  });

  it('never counts the page, its assets or the API reference: only the calls to the API', async (t) => {
    const server = await startFreshServer(sqlite, { RATE_LIMIT: '2/minute' });
    t.after(() => server.stop());
    // A person reloading the page gets it whole every time, styled and working.
    for (let i = 0; i < 3; i++) {
      for (const path of ['/', '/assets/style.css', '/assets/catalogue.js', '/docs/', '/openapi.json', '/docs/API.md']) {
        const res = await send(`${server.url}${path}`);
        assert.equal(res.status, 200, path);
        assert.equal(res.headers['x-ratelimit-limit'], undefined, path);
      }
    }
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(`${server.url}/api/v2/shop/products`)).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.equal((await send(`${server.url}/assets/style.css`)).status, 200);
  });

  it('counts each client behind a trusted proxy apart, and ignores forged headers otherwise', async (t) => {
    const behind = await startFreshServer(sqlite, { RATE_LIMIT: '2/minute', TRUST_PROXY: '1' });
    t.after(() => behind.stop());
    const direct = await startFreshServer(sqlite, { RATE_LIMIT: '2/minute' });
    t.after(() => direct.stop());
    const get = (server: typeof behind, client: string) =>
      send(`${server.url}/api/v2/shop/products`, { headers: { 'X-Forwarded-For': client, 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'shop.example' } });
    const statuses = [];
    for (const client of ['203.0.113.1', '203.0.113.1', '203.0.113.1', '203.0.113.2']) statuses.push((await get(behind, client)).status);
    assert.deepEqual(statuses, [200, 200, 429, 200]);

    // Without TRUST_PROXY, a client cannot escape the limit by making up addresses.
    const forged = [];
    for (const client of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) forged.push((await get(direct, client)).status);
    assert.deepEqual(forged, [200, 200, 429]);
  });

  it('counts a write refused for its token too, so that tokens cannot be guessed without limit', async (t) => {
    const server = await startFreshServer(sqlite, { RATE_LIMIT: '3/minute', API_TOKEN: 'the-right-token-of-the-shop' });
    t.after(() => server.stop());
    const create = (token: string) =>
      send(`${server.url}/api/v1/shop/product/`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: '{}' });
    const answers = [];
    for (const token of ['guess-1', 'guess-2', 'guess-3', 'guess-4', 'the-right-token-of-the-shop']) answers.push(await create(token));
    assert.deepEqual(answers.map((answer) => answer.status), [401, 401, 401, 429, 429]);
    // A refused write carries the limit's headers as every counted answer does.
    assert.deepEqual(answers.slice(0, 3).map((answer) => answer.headers['x-ratelimit-remaining']), ['2', '1', '0']);
    assert.equal((await send(`${server.url}/api/v2/shop/products`)).status, 429);
  });

  it('is off by default', async () => {
    const server = await startFreshServer(sqlite);
    try {
      for (let i = 0; i < 5; i++) assert.equal((await send(`${server.url}/api/v2/shop/products`)).status, 200);
      assert.equal((await send(`${server.url}/api/v2/shop/products`)).headers['x-ratelimit-limit'], undefined);
    } finally {
      await server.stop();
    }
  });
});

describe('TRUST_PROXY', () => {
  /** A service behind a proxy at 127.0.0.1 with two products, and the `next` link a request gets. */
  async function behindProxy(t: TestContext): Promise<(headers: Record<string, string>) => Promise<string>> {
    const server = await startFreshServer(sqlite, { TRUST_PROXY: '127.0.0.1', PAGE_SIZE: '1' });
    t.after(() => server.stop());
    await createProduct(server.url);
    await createProduct(server.url);
    return async (headers) => {
      const res = await send(`${server.url}/api/v2/shop/products`, { headers });
      assert.equal(res.status, 200, JSON.stringify(headers));
      return (res.json as { next: string }).next;
    };
  }

  it('builds page links with the scheme and host the client used at the proxy', async (t) => {
    const next = await behindProxy(t);
    assert.equal(await next({ 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'shop.example' }), 'https://shop.example/api/v2/shop/products?limit=1&offset=1');
  });

  it('writes no scheme but http or https into links: another X-Forwarded-Proto is ignored', async (t) => {
    const next = await behindProxy(t);
    const withProto = (proto: string) => next({ 'X-Forwarded-Proto': proto, 'X-Forwarded-Host': 'shop.example' });
    for (const proto of ['javascript', 'ftp', 'x', 'https:', 'data', 'HTTP']) {
      assert.equal(await withProto(proto), 'http://shop.example/api/v2/shop/products?limit=1&offset=1', proto);
    }
    assert.equal(await withProto('HTTPS'), 'https://shop.example/api/v2/shop/products?limit=1&offset=1');
    // A header a proxy appended to: the nearest proxy's entry counts.
    assert.equal(await withProto('javascript, https'), 'https://shop.example/api/v2/shop/products?limit=1&offset=1');
  });

  it('ignores an X-Forwarded-Host that is no valid host, and never serves one host\'s links to another', async (t) => {
    const next = await behindProxy(t);
    const withHost = (forwardedHost: string) => next({ Host: 'service.internal', 'X-Forwarded-Host': forwardedHost });
    assert.equal(await withHost('a.example'), 'http://a.example/api/v2/shop/products?limit=1&offset=1');
    // The same Host and target through the proxy for another site: its own links, not a cached page's.
    assert.equal(await withHost('b.example'), 'http://b.example/api/v2/shop/products?limit=1&offset=1');
    for (const bad of ['a..b', 'a:99999', 'a b']) {
      assert.equal(await withHost(bad), 'http://service.internal/api/v2/shop/products?limit=1&offset=1', bad);
    }
  });
});
