import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';
import { startFreshServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const TOKEN = 'test-token-0123456789abcdef';

describeEachStore('write token', { env: { API_TOKEN: TOKEN } }, (ctx) => {
  const create = (headers: Record<string, string>) =>
    postJson(`${ctx.server.url}/api/v1/shop/product/`, JSON.stringify({ name: 'Guarded', barcode: uniqueBarcode(), price: '1.00' }), headers);


  it('creates with the right bearer token', async () => {
    const res = await create({ Authorization: `Bearer ${TOKEN}` });
    assert.equal(res.status, 201);
  });

  const refusals: Array<[string, Record<string, string>, string]> = [
    ['no Authorization header', {}, 'Bearer realm="catalogue"'],
    ['another scheme', { Authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }, 'Bearer realm="catalogue"'],
    ['a wrong token', { Authorization: 'Bearer test-token-0123456789abcdeX' }, 'Bearer realm="catalogue", error="invalid_token"'],
    ['a prefix of the token', { Authorization: `Bearer ${TOKEN.slice(0, -1)}` }, 'Bearer realm="catalogue", error="invalid_token"'],
    ['the token plus more', { Authorization: `Bearer ${TOKEN}0` }, 'Bearer realm="catalogue", error="invalid_token"'],
  ];
  for (const [what, headers, challenge] of refusals) {
    it(`answers 401 with a challenge to ${what}, and stores nothing`, async () => {
      const before = (await listAll(ctx.server.url)).length;
      const res = await create(headers);
      assert.equal(res.status, 401);
      assert.equal(res.headers['www-authenticate'], challenge);
      assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
      assert.equal((res.json as { status: number }).status, 401);
      assert.equal((await listAll(ctx.server.url)).length, before);
    });
  }

  it('keeps reads public', async () => {
    const { pk } = (await create({ Authorization: `Bearer ${TOKEN}` })).json as { pk: number };
    assert.equal((await send(`${ctx.server.url}/api/v1/shop/products`)).status, 200);
    assert.equal((await send(`${ctx.server.url}/api/v2/shop/products`)).status, 200);
    assert.equal((await send(`${ctx.server.url}/api/v1/shop/product/${pk}`)).status, 200);
  });

  it('answers a wrong method 405 whatever the token', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/products`, { method: 'POST' });
    assert.equal(res.status, 405);
  });

  it('lets a browser send Authorization', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/product/`, { method: 'OPTIONS' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['access-control-allow-headers']), /\bAuthorization\b/);
  });
});

describe('without a token', () => {
  it('lets anyone create, and the preflight does not offer Authorization', async () => {
    const server = await startFreshServer(sqlite);
    try {
      const res = await postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify({ name: 'Open', barcode: uniqueBarcode(), price: '1.00' }));
      assert.equal(res.status, 201);
      const preflight = await send(`${server.url}/api/v1/shop/product/`, { method: 'OPTIONS' });
      assert.equal(preflight.headers['access-control-allow-headers'], 'Content-Type, Idempotency-Key, Last-Event-ID');
    } finally {
      await server.stop();
    }
  });
});
