import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { send } from '../helpers/http.js';
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
    } finally {
      await server.stop();
    }
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
