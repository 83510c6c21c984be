import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { createProduct, listAll } from '../helpers/products.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';

describeEachStore("cached answers after writes behind the service's back", (ctx) => {
  // SQLite checks another process's commit on the next request: the first answer after it is fresh.
  // PostgreSQL hears it by the database's notice, milliseconds after the commit: ten seconds bound a
  // notice that never comes.
  const withinMs = ctx.testStore.kind === 'sqlite' ? 0 : 10_000;
  const when = ctx.testStore.kind === 'sqlite' ? 'on the next request' : "once the database's notice has come";

  it(`serves a price changed by SQL UPDATE in detail, page and list ${when}`, async () => {
    const product = await createProduct(ctx.server.url, { price: '1.00' });
    const detailUrl = `${ctx.server.url}/api/v1/shop/product/${product.pk}`;
    const pageUrl = `${ctx.server.url}/api/v2/shop/products?limit=100`;
    // Twice each, so that the second answer comes from the cache.
    for (let i = 0; i < 2; i++) {
      await send(detailUrl);
      await send(pageUrl);
      await listAll(ctx.server.url);
    }
    const before = await send(detailUrl);
    const pageBefore = await send(pageUrl);

    await outsideSql(ctx.server.location, `UPDATE product SET price_cents = 12345 WHERE pk = ${product.pk}`);

    await passesWithin(withinMs, async () => {
      const detail = await send(detailUrl);
      assert.deepEqual(detail.json, { ...product, price: '123.45' });
      assert.notEqual(detail.headers.etag, before.headers.etag);
      const page = await send(pageUrl);
      const results = (page.json as { results: Array<{ barcode: string; price: string }> }).results;
      assert.equal(results.find((item) => item.barcode === product.barcode)?.price, '123.45');
      assert.notEqual(page.headers.etag, pageBefore.headers.etag);
      assert.equal((await listAll(ctx.server.url)).find((item) => item.pk === product.pk)?.price, '123.45');
    });
  });

  it(`counts a product inserted by another writer ${when}`, async () => {
    const pageUrl = `${ctx.server.url}/api/v2/shop/products?limit=100`;
    await send(pageUrl);
    const before = await send(pageUrl);
    const countBefore = (before.json as { count: number }).count;

    await outsideSql(ctx.server.location, "INSERT INTO product (name, barcode, price_cents) VALUES ('Added outside', '2999999999996', 250)");

    await passesWithin(withinMs, async () => {
      const page = await send(pageUrl);
      assert.equal((page.json as { count: number }).count, countBefore + 1);
      assert.notEqual(page.headers.etag, before.headers.etag);
      const list = await listAll(ctx.server.url);
      assert.equal(list.length, countBefore + 1);
      assert.equal(list.at(-1)?.name, 'Added outside');
    });
  });
});
