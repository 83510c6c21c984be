import assert from 'node:assert/strict';
import { it } from 'node:test';
import { BulkWriteRunningError, CatalogueNotEmptyError, DuplicateBarcodeError } from '../../src/catalogue/errors.js';
import { MAX_PK, type NewProduct, type Product } from '../../src/catalogue/product.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { startServer } from '../helpers/server.js';
import { storedProducts } from '../helpers/store-contents.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

const product = (pk: number, name = `Product ${pk}`): Product => ({ pk, name, barcode: uniqueBarcode(), priceCents: 100 + pk });
const newProduct = (name: string): NewProduct => ({ name, barcode: uniqueBarcode(), priceCents: 250 });

/** `products` in batches of `size`; `between(i)` runs before batch i (from 1), as other writers would meanwhile. */
async function* inBatches(products: readonly Product[], size: number, between: (batch: number) => Promise<void> = async () => undefined): AsyncGenerator<Product[]> {
  for (let start = 0; start < products.length; start += size) {
    if (start > 0) await between(start / size);
    yield products.slice(start, start + size);
  }
}

/** A backup's products: odd pks (the others were removed), then `highest` (above them all). */
function backup(count: number, highest: number): Product[] {
  assert.ok(2 * count < highest);
  return [...Array.from({ length: count - 1 }, (_, i) => product(2 * i + 1)), product(highest)];
}

async function catalogueId(store: CatalogueStore): Promise<string> {
  return (await store.readChanges(0, 1)).catalogue;
}

describeEachStore('restoreProducts', { env: false, stores: CONTRACT_STORES }, (ctx) => {
  it('restores every product with its own pk into an empty catalogue; later creates follow the highest, and the identity is new', async (t) => {
    const store = await ctx.freshStore(t);
    const before = await catalogueId(store);
    const products = backup(1_500, 5_000);
    assert.deepEqual(await store.restoreProducts(inBatches(products, 400), { replace: false, check: async () => 5_000 }), { restored: 1_500, removed: 0 });
    assert.deepEqual(await storedProducts(store), products);
    assert.equal((await store.createProduct(newProduct('After'))).pk, 5_001);
    assert.notEqual(await catalogueId(store), before);
    assert.deepEqual(await store.describeCatalogue().then(({ count, version }) => ({ count, version })), { count: 1_501, version: 1_501 });
  });

  it('refuses creates over HTTP from before it checks its file until it has finished: no create answered 201 is removed by it', async (t) => {
    const database = await ctx.freshDatabase(t);
    const store = await database.open();
    await store.insertProducts(inBatches(Array.from({ length: 30 }, (_, i) => product(i + 1)), 30));
    const server = await startServer(database.location, {}, { storeOptions: ctx.testStore.storeOptions });
    t.after(() => server.stop());
    const answers: Array<{ status: number; retryAfter: unknown; detail: unknown }> = [];
    const tryCreates = async (): Promise<void> => {
      for (const headers of [{} as Record<string, string>, { 'Idempotency-Key': `during-restore-${process.pid}-${answers.length}` }]) {
        const body = JSON.stringify({ name: 'Meanwhile', barcode: uniqueBarcode(), price: '1.00' });
        const res = await postJson(`${server.url}/api/v1/shop/product/`, body, headers);
        answers.push({ status: res.status, retryAfter: res.headers['retry-after'], detail: (res.json as { detail?: unknown }).detail });
      }
    };
    const products = backup(1_500, 4_000);
    const restoring = inBatches(products, 1_000, tryCreates);
    const check = async (): Promise<number> => {
      await tryCreates();
      return 4_000;
    };
    assert.deepEqual(await store.restoreProducts(restoring, { replace: true, check }), { restored: 1_500, removed: 30 });
    const refused = { status: 503, retryAfter: '5', detail: 'The catalogue is being restored from a backup; nothing was stored. Try again once the restore has finished.' };
    assert.deepEqual(answers, [refused, refused, refused, refused]);
    assert.deepEqual(await storedProducts(store), products);
    assert.equal((await createProduct(server.url, { name: 'After' })).pk, 4_001);
  });

  it('shows no change of its own under the old identity: a till reading the feed at every step sees the new one with the first', async (t) => {
    const database = await ctx.freshDatabase(t);
    const store = await database.open();
    await store.insertProducts(inBatches(Array.from({ length: 1_200 }, (_, i) => product(i + 1)), 1_200));
    const server = await startServer(database.location, {}, { storeOptions: ctx.testStore.storeOptions });
    t.after(() => server.stop());
    const feed = async (): Promise<{ catalogue_id: string; version: number }> => (await send(`${server.url}/api/v2/shop/changes?since=0&limit=1`)).json as { catalogue_id: string; version: number };
    const before = await feed();
    const seen: Array<{ catalogue_id: string; version: number }> = [];
    const restoring = inBatches(backup(2_500, 6_000), 1_000, async () => {
      seen.push(await feed());
    });
    await store.restoreProducts(restoring, { replace: true, check: async () => (seen.push(await feed()), 6_000) });
    seen.push(await feed());
    // Every page past the version before the restore carries another identity than before.
    assert.deepEqual(seen.filter((page) => page.version > before.version && page.catalogue_id === before.catalogue_id), []);
    assert.equal(seen[0]!.catalogue_id, before.catalogue_id);
    assert.ok(seen.length >= 4);
  });

  it('restores a pk of 2^53 - 1; a create after it is refused with 507, never given a pk a JSON client cannot read', async (t) => {
    const database = await ctx.freshDatabase(t);
    const store = await database.open();
    const products = [product(1), { ...product(MAX_PK), priceCents: 199 }];
    assert.deepEqual(await store.restoreProducts(inBatches(products, 2), { replace: false, check: async () => MAX_PK }), { restored: 2, removed: 0 });
    const server = await startServer(database.location, {}, { storeOptions: ctx.testStore.storeOptions });
    t.after(() => server.stop());
    for (const headers of [{} as Record<string, string>, { 'Idempotency-Key': `past-the-last-pk-${process.pid}` }]) {
      const res = await postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify({ name: 'One too many', barcode: uniqueBarcode(), price: '1.00' }), headers);
      assert.equal(res.status, 507, res.text);
      assert.deepEqual(res.json, {
        type: 'about:blank',
        title: 'Insufficient Storage',
        status: 507,
        detail: 'The catalogue has given out every pk up to 9007199254740991, the largest a JSON client reads exactly; nothing was stored. Products can no longer be created in this catalogue.',
      });
    }
    assert.deepEqual(await storedProducts(store), products);
    assert.deepEqual((await send(`${server.url}/api/v1/shop/product/${MAX_PK}`)).json, { pk: MAX_PK, name: products[1]!.name, barcode: products[1]!.barcode, price: '1.99' });
  });

  it('answers a retry keyed for a product whose pk a restore gave another product with 410, never the other product', async (t) => {
    const database = await ctx.freshDatabase(t);
    const store = await database.open();
    const server = await startServer(database.location, {}, { storeOptions: ctx.testStore.storeOptions });
    t.after(() => server.stop());
    const key = { 'Idempotency-Key': `before-the-restore-${process.pid}` };
    const body = JSON.stringify({ name: 'Keyed', barcode: uniqueBarcode(), price: '1.00' });
    const created = await postJson(`${server.url}/api/v1/shop/product/`, body, key);
    assert.equal(created.status, 201);
    const { pk } = created.json as { pk: number };
    // A backup from another catalogue, whose product with that pk is another one.
    const other = product(pk, 'Another product');
    await store.restoreProducts(inBatches([other], 1), { replace: true, check: async () => pk });
    const retried = await postJson(`${server.url}/api/v1/shop/product/`, body, key);
    assert.deepEqual([retried.status, retried.json], [
      410,
      {
        type: 'about:blank',
        title: 'Gone',
        status: 410,
        detail: `The product this Idempotency-Key created (pk ${pk}) is no longer in the catalogue: another product is under its pk since (a restored backup, or plain SQL that moved products). It is not created again.`,
        errors: { 'Idempotency-Key': ['Its product is no longer in the catalogue.'] },
      },
    ]);
    assert.deepEqual(await storedProducts(store), [other]);
  });

  it('refuses a catalogue that holds products unless told to replace them, and then replaces them all; pks never go back', async (t) => {
    const store = await ctx.freshStore(t);
    await store.insertProducts(inBatches(Array.from({ length: 1_200 }, (_, i) => product(i + 1)), 500));
    const there = await storedProducts(store);
    const products = backup(400, 1_000);
    await assert.rejects(store.restoreProducts(inBatches(products, 500), { replace: false, check: async () => 1_000 }), (error: unknown) => {
      assert.ok(error instanceof CatalogueNotEmptyError);
      assert.equal(error.message, 'The catalogue holds 1200 products; a restore loads into an empty catalogue unless told to replace what is there.');
      return true;
    });
    assert.deepEqual(await storedProducts(store), there);

    assert.deepEqual(await store.restoreProducts(inBatches(products, 500), { replace: true, check: async () => 1_000 }), { restored: 400, removed: 1_200 });
    assert.deepEqual(await storedProducts(store), products);
    // 1,200 pks were drawn here before: none is drawn again.
    assert.equal((await store.createProduct(newProduct('After'))).pk, 1_201);
  });

  it('undoes everything when it fails half-way: the products there before are back, with their pks', async (t) => {
    const store = await ctx.freshStore(t);
    await store.insertProducts(inBatches(Array.from({ length: 1_500 }, (_, i) => product(i + 1)), 500));
    const there = await storedProducts(store);
    const products = backup(1_400, 3_000);
    const failing = inBatches(products, 1_000, async (batch) => {
      if (batch === 1) throw new Error('the backup file went away');
    });
    const undos: number[] = [];
    await assert.rejects(store.restoreProducts(failing, { replace: true, check: async () => 3_000, onUndo: ({ steps }) => undos.push(steps) }), /the backup file went away/);
    // The first step (the identity, the pks reserved), two of removal, one of the backup's first thousand products.
    assert.deepEqual(undos, [4]);
    assert.deepEqual(await storedProducts(store), there);
    // The journal is gone: the next bulk write runs.
    assert.equal(await store.insertProducts(inBatches([product(1, 'Next')], 1)), 1);
  });

  it('refuses a barcode written meanwhile behind the store\'s back, restoring nothing, and runs alone among bulk writes', async (t) => {
    const database = await ctx.freshDatabase(t);
    const store = await database.open();
    const products = backup(900, 2_000);
    const taking = inBatches(products, 500, async () => {
      await outsideSql(database.location, `INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ('Took it', 'took it', '${products.at(-1)!.barcode}', 1)`);
    });
    await assert.rejects(store.restoreProducts(taking, { replace: false, check: async () => 2_000 }), (error: unknown) => error instanceof DuplicateBarcodeError && error.barcode === products.at(-1)!.barcode);
    assert.deepEqual((await storedProducts(store)).map((p) => p.name), ['Took it']);

    const identity = await catalogueId(store);
    const other = await store.insertProducts(
      (async function* () {
        await assert.rejects(store.restoreProducts(inBatches([product(1)], 1), { replace: true, check: async () => 1 }), BulkWriteRunningError);
        yield [newProduct('Imported')];
      })(),
    );
    assert.equal(other, 1);
    // Refused before its first step: the catalogue keeps its identity.
    assert.equal(await catalogueId(store), identity);
  });
});
