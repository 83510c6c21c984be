import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { NewProduct } from '../../src/catalogue/product.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedProducts } from '../helpers/store-contents.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

const product = (name: string, priceCents = 100): NewProduct => ({ name, barcode: uniqueBarcode(), priceCents });

async function* inBatches(products: readonly NewProduct[], size: number): AsyncGenerator<NewProduct[]> {
  for (let start = 0; start < products.length; start += size) yield products.slice(start, start + size);
}

describeEachStore('applyPriceList', { env: false, stores: CONTRACT_STORES }, (ctx) => {
  it('updates by barcode and adds in list order across many statements, drawing pks only for added products', async (t) => {
    const store = await ctx.freshStore(t);
    const stored = Array.from({ length: 700 }, (_, i) => product(`Stored ${i}`));
    assert.equal(await store.insertProducts(inBatches(stored, 300)), 700);

    // Every other stored product gets a new price, interleaved with new products, over several
    // batches and statements.
    const list: NewProduct[] = [];
    for (let i = 0; i < 700; i++) {
      list.push(i % 2 === 0 ? { ...stored[i]!, priceCents: 250 } : stored[i]!);
      if (i % 3 === 0) list.push(product(`New ${i}`, 999));
    }
    const added = list.filter((p) => p.name.startsWith('New'));
    assert.deepEqual(await store.applyPriceList(inBatches(list, 650)), { added: added.length, changed: 350, unchanged: 350 });

    const all = await storedProducts(store);
    assert.deepEqual(
      all,
      [...stored.map((p, i) => (i % 2 === 0 ? { ...p, priceCents: 250 } : p)), ...added].map((p, i) => ({ pk: i + 1, ...p })),
    );
    assert.equal((await store.createProduct(product('After'))).pk, 700 + added.length + 1);
  });

  it('writes nothing, and leaves the revision, when every product is already as listed', async (t) => {
    const store = await ctx.freshStore(t);
    const stored = [product('Tea'), product('Honey')];
    await store.insertProducts(inBatches(stored, 10));
    const before = await store.describeCatalogue();
    assert.deepEqual(await store.applyPriceList(inBatches(stored, 10)), { added: 0, changed: 0, unchanged: 2 });
    assert.deepEqual(await store.describeCatalogue(), before);
  });

  it('is all or nothing: a list that fails half-way leaves the catalogue as it was, its undone products\' pks unused again', async (t) => {
    const store = await ctx.freshStore(t);
    const tea = product('Tea');
    await store.insertProducts(inBatches([tea], 10));
    const before = await store.describeCatalogue();
    async function* failing(): AsyncGenerator<NewProduct[]> {
      yield [{ ...tea, priceCents: 5000 }, product('Honey')];
      throw new Error('the file went away');
    }
    let undone = false;
    await assert.rejects(store.applyPriceList(failing(), { onUndo: ({ steps }) => (undone = steps === 1) }), /the file went away/);
    assert.equal(undone, true);
    assert.deepEqual(await storedProducts(store), [{ pk: 1, ...tea }]);
    const after = await store.describeCatalogue();
    assert.equal(after.count, before.count);
    // The step that landed and its undoing are changes a copy of the catalogue hears of: Honey came
    // and went (pk 2, never used again), Tea's price went and came back.
    assert.deepEqual(
      (await store.readChanges(before.version, 10)).changes.map(({ pk, product }) => [pk, product?.priceCents]),
      [
        [2, undefined],
        [1, tea.priceCents],
      ],
    );
    const honey = product('Honey');
    assert.deepEqual(await store.applyPriceList(inBatches([honey, { ...tea, priceCents: 5000 }], 10)), { added: 1, changed: 1, unchanged: 0 });
    assert.equal((await store.createProduct(product('Next'))).pk, 4);
    assert.deepEqual((await storedProducts(store)).slice(0, 2), [{ pk: 1, ...tea, priceCents: 5000 }, { pk: 3, ...honey }]);
  });
});
