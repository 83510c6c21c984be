import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DuplicateBarcodeError, IdempotencyKeyTakenError } from '../../src/catalogue/errors.js';
import { describeEachStore } from '../helpers/each-store.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedCount } from '../helpers/store-contents.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

const DAY_MS = 24 * 60 * 60 * 1000;

describeEachStore('idempotency records and bulk insert', { env: false, stores: CONTRACT_STORES }, (ctx) => {
  it('forgets a key once it is older than the cutoff, and lets it be used again', async (t) => {
    const store = await ctx.freshStore(t);
    const now = Date.now();
    const old = await store.createKeyedProduct(
      { name: 'Old', barcode: uniqueBarcode(), priceCents: 100 },
      { key: 'k', fingerprint: 'f1', createdAt: new Date(now - 2 * DAY_MS) },
      new Date(now - 3 * DAY_MS),
    );
    assert.deepEqual(await store.findKeyedCreation('k', new Date(now - 3 * DAY_MS)), { fingerprint: 'f1', pk: old.pk, product: old });
    assert.equal(await store.findKeyedCreation('k', new Date(now - DAY_MS)), undefined);

    const reused = await store.createKeyedProduct(
      { name: 'New', barcode: uniqueBarcode(), priceCents: 200 },
      { key: 'k', fingerprint: 'f2', createdAt: new Date(now) },
      new Date(now - DAY_MS),
    );
    assert.deepEqual(await store.findKeyedCreation('k', new Date(now - DAY_MS)), { fingerprint: 'f2', pk: reused.pk, product: reused });
  });

  it('tells a taken key from a taken barcode, and draws no pk for either', async (t) => {
    const store = await ctx.freshStore(t);
    const now = new Date();
    const cutoff = new Date(now.getTime() - DAY_MS);
    const first = await store.createKeyedProduct({ name: 'First', barcode: uniqueBarcode(), priceCents: 100 }, { key: 'k', fingerprint: 'f1', createdAt: now }, cutoff);
    await assert.rejects(
      store.createKeyedProduct({ name: 'Other', barcode: uniqueBarcode(), priceCents: 1 }, { key: 'k', fingerprint: 'f2', createdAt: now }, cutoff),
      (error: unknown) => {
        assert.ok(error instanceof IdempotencyKeyTakenError);
        assert.deepEqual(error.creation, { fingerprint: 'f1', pk: first.pk, product: first });
        return true;
      },
    );
    await assert.rejects(
      store.createKeyedProduct({ name: 'Same code', barcode: first.barcode, priceCents: 1 }, { key: 'k2', fingerprint: 'f3', createdAt: now }, cutoff),
      (error: unknown) => error instanceof DuplicateBarcodeError && error.barcode === first.barcode,
    );
    // A refused row that drew a pk (a PostgreSQL sequence is not rolled back) would leave a gap here.
    const next = await store.createProduct({ name: 'Next', barcode: uniqueBarcode(), priceCents: 1 });
    assert.equal(next.pk, first.pk + 1);
    assert.equal(await store.findKeyedCreation('k2', cutoff), undefined);
  });

  it('inserts batches all or nothing and names the taken barcode', async (t) => {
    const store = await ctx.freshStore(t);
    const taken = uniqueBarcode();
    await store.createProduct({ name: 'Taken', barcode: taken, priceCents: 1 });
    async function* batches() {
      yield [{ name: 'A', barcode: uniqueBarcode(), priceCents: 1 }];
      yield [{ name: 'B', barcode: uniqueBarcode(), priceCents: 2 }, { name: 'C', barcode: taken, priceCents: 3 }];
    }
    await assert.rejects(store.insertProducts(batches()), (error: unknown) => error instanceof DuplicateBarcodeError && error.barcode === taken);
    assert.equal(await storedCount(store), 1);

    async function* good() {
      yield Array.from({ length: 1200 }, (_, i) => ({ name: `P${i}`, barcode: uniqueBarcode(), priceCents: i }));
    }
    assert.equal(await store.insertProducts(good()), 1200);
    assert.equal(await storedCount(store), 1201);
    const some = [taken, uniqueBarcode()];
    assert.deepEqual(await store.existingBarcodes(some), new Set([taken]));
  });
});
