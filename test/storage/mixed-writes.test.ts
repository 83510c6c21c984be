import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { NewProduct } from '../../src/catalogue/product.js';
import { describeEachStore } from '../helpers/each-store.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedCount, storedProducts } from '../helpers/store-contents.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

const product = (name: string): NewProduct => ({ name, barcode: uniqueBarcode(), priceCents: 100 });

describeEachStore('writes in transactions beside grouped creates', { env: false, stores: CONTRACT_STORES }, (ctx) => {
  it('keyed creates, bulk inserts and plain creates at once all land, each exactly once', async (t) => {
    const store = await ctx.freshStore(t);
    const expected: string[] = [];
    for (let round = 0; round < 20; round++) {
      const plain = Array.from({ length: 5 }, (_, i) => product(`Plain ${round}.${i}`));
      const keyed = product(`Keyed ${round}`);
      const bulk = [product(`Bulk ${round}.a`), product(`Bulk ${round}.b`)];
      // A real import reads its file between batches: the transaction stays open across I/O.
      async function* batches() {
        yield bulk.slice(0, 1);
        await new Promise((resolve) => setTimeout(resolve, 2));
        yield bulk.slice(1);
      }
      await Promise.all([
        store.createKeyedProduct(keyed, { key: `key-${round}`, fingerprint: 'f', createdAt: new Date() }, new Date(0)),
        ...plain.map((p) => store.createProduct(p)),
        store.insertProducts(batches()),
        store.findProduct(1),
        store.describeCatalogue(),
      ]);
      expected.push(...[keyed, ...plain, ...bulk].map((p) => p.barcode));
    }
    const stored = await storedProducts(store);
    assert.deepEqual(stored.map((p) => p.barcode).sort(), expected.sort());
    assert.equal(await storedCount(store), expected.length);
  });
});
