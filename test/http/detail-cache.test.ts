import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { createProduct } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { spyOnStore } from '../helpers/store-spy.js';

describeEachStore('a product kept while products are created', { env: false }, (ctx) => {
  const reads = { count: 0 };
  let server: RunningServer;
  before(async () => {
    server = await startFreshServer(ctx.testStore, {}, {
      wrapStore: (store) =>
        spyOnStore(store, 'findProduct', (_args, call) => {
          reads.count += 1;
          return call();
        }),
    });
  });
  after(() => server.stop());

  /** Reads the product until an answer comes from memory (no read of the store), checking every answer. */
  const detailSettled = async (url: string, expected: unknown): Promise<void> => {
    await passesWithin(1_000, async () => {
      const readsBefore = reads.count;
      const answer = await send(url);
      assert.deepEqual(answer.json, expected);
      assert.equal(reads.count, readsBefore, 'every answer was read from the store: nothing is kept');
    }, 50);
  };

  it('answers a product from memory across creates, and reads it again once it is changed or removed', async () => {
    const product = await createProduct(server.url, { price: '1.00' });
    const url = `${server.url}/api/v1/shop/product/${product.pk}`;
    await detailSettled(url, product);

    const settled = reads.count;
    for (let i = 0; i < 5; i++) await createProduct(server.url);
    assert.deepEqual((await send(url)).json, product);
    assert.equal(reads.count, settled, 'a create made the product be read again');

    // A product created is found at once, though the one kept was kept before it existed.
    const added = await createProduct(server.url);
    assert.deepEqual((await send(`${server.url}/api/v1/shop/product/${added.pk}`)).json, added);

    // A change outside the service ends it (SQLite: on the next request; PostgreSQL: once its notice comes).
    const withinMs = ctx.testStore.kind === 'sqlite' ? 0 : 10_000;
    await outsideSql(server.location, `UPDATE product SET price_cents = 250 WHERE pk = ${product.pk}`);
    await passesWithin(withinMs, async () => assert.deepEqual((await send(url)).json, { ...product, price: '2.50' }));
    await outsideSql(server.location, `DELETE FROM product WHERE pk = ${product.pk}`);
    await passesWithin(withinMs, async () => assert.equal((await send(url)).status, 404));
    // And a pk never found is not kept: created later (here, restored by SQL with its pk), it is found.
    const givenPk = ctx.testStore.kind === 'postgres' ? 'OVERRIDING SYSTEM VALUE' : '';
    await outsideSql(server.location, `INSERT INTO product (pk, name, barcode, price_cents) ${givenPk} VALUES ($1, $2, $3, 100)`, [product.pk, product.name, product.barcode]);
    await passesWithin(withinMs, async () => assert.deepEqual((await send(url)).json, product));
  });
});
