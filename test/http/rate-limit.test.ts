import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';
import { startFreshServer } from '../helpers/server.js';
import { STORES } from '../helpers/stores.js';

describe('RATE_LIMIT', () => {
  it('answers 429 with Retry-After once a client goes over the limit', async () => {
    const server = await startFreshServer(STORES[0]!, { RATE_LIMIT: '3/minute' });
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

  it('counts each client behind a trusted proxy apart, and ignores forged headers otherwise', async (t) => {
    const behind = await startFreshServer(STORES[0]!, { RATE_LIMIT: '2/minute', TRUST_PROXY: '1' });
    t.after(() => behind.stop());
    const direct = await startFreshServer(STORES[0]!, { RATE_LIMIT: '2/minute' });
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

  it('is off by default', async () => {
    const server = await startFreshServer(STORES[0]!);
    try {
      for (let i = 0; i < 5; i++) assert.equal((await send(`${server.url}/api/v2/shop/products`)).status, 200);
      assert.equal((await send(`${server.url}/api/v2/shop/products`)).headers['x-ratelimit-limit'], undefined);
    } finally {
      await server.stop();
    }
  });
});

describe('TRUST_PROXY', () => {
  it('builds page links with the scheme and host the client used at the proxy', async () => {
    const server = await startFreshServer(STORES[0]!, { TRUST_PROXY: '127.0.0.1', PAGE_SIZE: '1' });
    try {
      await createProduct(server.url);
      await createProduct(server.url);
      const res = await send(`${server.url}/api/v2/shop/products`, { headers: { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'shop.example' } });
      assert.equal((res.json as { next: string }).next, 'https://shop.example/api/v2/shop/products?limit=1&offset=1');
    } finally {
      await server.stop();
    }
  });
});
