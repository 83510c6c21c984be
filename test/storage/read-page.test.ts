import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { DatabaseLocation } from '../../src/config.js';
import { openStore } from '../../src/storage/open-store.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedCount, storedProducts } from '../helpers/store-contents.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

describeEachStore('readPage and the catalogue state', { env: false, stores: CONTRACT_STORES }, (ctx) => {
  let location: DatabaseLocation;
  let drop: () => Promise<void>;
  let store: CatalogueStore;
  before(async () => {
    ({ location, drop } = await ctx.testStore.create());
    store = await openStore(location, ctx.testStore.storeOptions);
  });
  after(async () => {
    await store.close();
    await drop();
  });

  it('reads an empty catalogue', async () => {
    assert.deepEqual(await store.readPage(0, 10), { count: 0, revision: 0, products: [] });
  });

  it('pages as slicing the whole list does, with and without gaps in the pks', async () => {
    for (let i = 0; i < 25; i++) await store.createProduct({ name: `Paged ${i}`, barcode: uniqueBarcode(), priceCents: i });
    const check = async (): Promise<void> => {
      const all = await storedProducts(store);
      const count = await storedCount(store);
      assert.equal(count, all.length);
      for (const [offset, limit] of [[0, 10], [7, 5], [count - 3, 10], [count, 10], [count + 5, 1]] as const) {
        const page = await store.readPage(offset, limit);
        assert.equal(page.count, count);
        assert.deepEqual(page.products, all.slice(offset, offset + limit), `offset ${offset}, limit ${limit}`);
      }
    };
    await check();
    // Gaps make the pks sparse: the constant-time shortcut must give way to the index walk.
    const all = await storedProducts(store);
    await outsideSql(location, `DELETE FROM product WHERE pk IN (${all[0]!.pk}, ${all[5]!.pk}, ${all[12]!.pk})`);
    assert.equal(await storedCount(store), all.length - 3);
    await check();
  });

  it('moves the revision on every write, and only then', async () => {
    const before = await store.describeCatalogue();
    assert.deepEqual(await store.describeCatalogue(), before);
    await store.createProduct({ name: 'Revised', barcode: uniqueBarcode(), priceCents: 1 });
    const after = await store.describeCatalogue();
    assert.equal(after.count, before.count + 1);
    assert.ok(after.revision > before.revision);
    await outsideSql(location, "UPDATE product SET name = 'Renamed' WHERE name = 'Revised'");
    const renamed = await store.describeCatalogue();
    assert.equal(renamed.count, after.count);
    assert.ok(renamed.revision > after.revision);
  });
});
