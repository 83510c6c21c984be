import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { StoreBusyError } from '../../src/catalogue/errors.js';
import { openStore } from '../../src/storage/open-store.js';
import { openSqliteConnection, type SqliteConnection } from '../../src/storage/sqlite/driver.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedProducts } from '../helpers/store-contents.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

/** How long the stores here let a write wait for the lock. */
const WRITE_WAIT_MS = 1_000;

/**
 * Whether `read`, started while `waiting` waits for the lock, is answered before `waiting` settles. A
 * wait on timers leaves the event loop to other work; one inside SQLite's busy handler would hold the
 * loop until it ends, and the read would come after it, whatever the machine's speed.
 */
async function answeredMeanwhile(waiting: Promise<unknown>, read: () => Promise<unknown>): Promise<boolean> {
  let settled = false;
  void waiting.then(
    () => (settled = true),
    () => (settled = true),
  );
  // A turn of the event loop first: writes that waited inside SQLite have settled by then.
  await new Promise((resolve) => setImmediate(resolve));
  await read();
  return !settled;
}

describeEachStore('writes waiting for another connection\'s write lock', { env: false, stores: CONTRACT_STORES.filter((s) => s.name.startsWith('sqlite')) }, (ctx) => {
  /** A store over a fresh file, and a second connection to the same file, as another process would hold it. */
  async function storeAndOther(t: TestContext): Promise<{ store: CatalogueStore; other: SqliteConnection }> {
    const { location, drop } = await ctx.testStore.create();
    if (location.kind !== 'sqlite') throw new Error('expected SQLite');
    const store = await openStore(location, { ...ctx.testStore.storeOptions, writeWaitMs: WRITE_WAIT_MS });
    const other = openSqliteConnection(location.path);
    t.after(async () => {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await store.close();
      await drop();
    });
    return { store, other };
  }

  it('waits on timers while reads go on, and stores the product once the lock is free', async (t) => {
    const { store, other } = await storeAndOther(t);
    const stored = await store.createProduct({ name: 'Before', barcode: uniqueBarcode(), priceCents: 100 });
    other.exec('BEGIN IMMEDIATE');
    // The lock is let go by this process: were the waits on the event loop, it never could be.
    const result = await (async () => {
      const create = store.createProduct({ name: 'Waiting', barcode: uniqueBarcode(), priceCents: 200 });
      const keyed = store.createKeyedProduct({ name: 'Keyed', barcode: uniqueBarcode(), priceCents: 300 }, { key: 'k', fingerprint: 'f', createdAt: new Date() }, new Date(0));
      // While both wait, every kind of read is answered.
      // Held for 600 ms, while every kind of read goes on.
      const held = performance.now();
      while (performance.now() - held < 600) {
        assert.deepEqual(await store.findProduct(stored.pk), stored);
        assert.equal((await store.readPage(0, 10)).count, 1);
        assert.equal((await store.readChanges(0, 10)).changes.length, 1);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      other.exec('COMMIT');
      return Promise.all([create, keyed]);
    })();
    assert.deepEqual(
      result.map((product) => product.name),
      ['Waiting', 'Keyed'],
    );
    // The two waited together: either may have taken the lock first.
    assert.deepEqual(
      (await storedProducts(store)).map((product) => product.name).sort(),
      ['Before', 'Keyed', 'Waiting'],
    );
    const waits = store.writeWaits()!;
    // Without the fast paths both are transactions on the one writing connection: the second queues
    // behind the first, which alone met the lock taken.
    assert.ok(waits.waits >= 1, `${waits.waits} waits`);
    assert.equal(waits.timeouts, 0);
    assert.ok(waits.seconds >= 0.1, `waited ${waits.seconds} s`);
  });

  it('gives up after the wait it is allowed, with nothing stored', async (t) => {
    const { store, other } = await storeAndOther(t);
    other.exec('BEGIN IMMEDIATE');
    const refused = Promise.allSettled([
      store.createProduct({ name: 'Refused', barcode: uniqueBarcode(), priceCents: 100 }),
      store.createKeyedProduct({ name: 'Refused too', barcode: uniqueBarcode(), priceCents: 100 }, { key: 'k', fingerprint: 'f', createdAt: new Date() }, new Date(0)),
    ]);
    assert.equal(await answeredMeanwhile(refused, () => store.readPage(0, 10)), true, 'a read waited for the writes that wait for the lock');
    const result = await refused;
    other.exec('COMMIT');
    for (const outcome of result) {
      assert.equal(outcome.status, 'rejected');
      assert.ok(outcome.reason instanceof StoreBusyError, String(outcome.reason));
    }
    assert.deepEqual(await storedProducts(store), []);
    assert.ok(store.writeWaits()!.timeouts >= 1);
    // Free again: the next create goes through at once.
    assert.equal((await store.createProduct({ name: 'After', barcode: uniqueBarcode(), priceCents: 100 })).name, 'After');
  });
});
