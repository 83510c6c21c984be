import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { createProduct, listAll } from '../helpers/products.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM = 'application/problem+json; charset=utf-8';
const notFound = (detail: string) => ({ type: 'about:blank', title: 'Not Found', status: 404, detail });

describeEachStore('reading products', (ctx) => {
  it('lists an empty catalogue as []', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/products`);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], JSON_TYPE);
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.equal(res.text, '[]');
  });

  it('lists every product in pk order with pk, name, barcode, price (more than one fetch batch)', async () => {
    // Eight tills creating at once, as a shop's do: their creates are stored in whatever order they commit.
    const created: Awaited<ReturnType<typeof createProduct>>[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, till) => {
        for (let i = till; i < 1203; i += 8) created.push(await createProduct(ctx.server.url, { name: `Item ${i}`, price: `${i}.${String(i % 100).padStart(2, '0')}` }));
      }),
    );
    created.sort((a, b) => a.pk - b.pk);
    for (const path of ['/api/v1/shop/products', '/api/v1/shop/products/']) {
      const res = await send(`${ctx.server.url}${path}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, created);
    }
  });

  it('reads one product by pk, with or without a trailing slash', async () => {
    const product = await createProduct(ctx.server.url, { name: 'Nutella 400 g', barcode: '3017620422003', price: '3.49' });
    for (const suffix of ['', '/']) {
      const res = await send(`${ctx.server.url}/api/v1/shop/product/${product.pk}${suffix}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], JSON_TYPE);
      assert.equal(res.text, `{"pk":${product.pk},"name":"Nutella 400 g","barcode":"3017620422003","price":"3.49"}`);
    }
  });

  it('answers 404 with a problem document for a pk no product has', async () => {
    const all = await listAll(ctx.server.url);
    const missing = all[all.length - 1]!.pk + 1000;
    const res = await send(`${ctx.server.url}/api/v1/shop/product/${missing}`);
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], PROBLEM);
    assert.deepEqual(res.json, notFound(`No product has pk ${missing}.`));
  });

  for (const pk of ['abc', '0', '-1', '1.5', '9999999999999999999999', '1e2', '%20']) {
    it(`answers 404 for the pk "${pk}"`, async () => {
      const res = await send(`${ctx.server.url}/api/v1/shop/product/${pk}`);
      assert.equal(res.status, 404);
      assert.equal(res.headers['content-type'], PROBLEM);
      assert.equal((res.json as { status: number }).status, 404);
    });
  }

  it('answers HEAD like GET without a body', async () => {
    const product = await createProduct(ctx.server.url);
    for (const path of [`/api/v1/shop/product/${product.pk}`, '/api/v1/shop/products', '/api/v2/shop/products']) {
      const get = await send(`${ctx.server.url}${path}`);
      const head = await send(`${ctx.server.url}${path}`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      assert.equal(head.headers['content-type'], get.headers['content-type']);
      assert.equal(head.headers['content-length'], get.headers['content-length']);
      assert.equal(head.headers['access-control-allow-origin'], '*');
    }
  });

  it('answers 404 with a problem document for a path that is no route', async () => {
    for (const path of ['/nothing', '/api', '/api/v1/shop/productz', '/api/v3/shop/products', '/api/v1/shop/product/1/extra']) {
      const res = await send(`${ctx.server.url}${path}`);
      assert.equal(res.status, 404, path);
      assert.equal(res.headers['content-type'], PROBLEM);
      assert.deepEqual(res.json, notFound(`There is nothing at GET ${path}.`));
    }
  });
});
