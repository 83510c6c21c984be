import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { createProduct, listAll } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';

/** The store, counting the batches of products it reads. */
function countingReads(store: CatalogueStore, reads: { count: number }): CatalogueStore {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        if (key === 'listProductsAfter') reads.count += 1;
        return Reflect.apply(value, target, args);
      };
    },
  });
}

describeEachStore('v1 list kept per revision', { env: false }, (ctx) => {
  const reads = { count: 0 };
  let server: RunningServer;
  before(async () => {
    server = await startFreshServer(ctx.testStore, {}, { wrapStore: (store) => countingReads(store, reads) });
  });
  after(() => server.stop());

  /**
   * PostgreSQL announces a commit to every instance, this one too, a moment after it answered: the
   * notice starts a new cache generation (one more read, never a stale one). Wait for it to arrive,
   * so that the reads counted are the cache's alone.
   */
  const created = async () => {
    const product = await createProduct(server.url);
    await sleep(200);
    return product;
  };

  it('reads the catalogue once per revision: the same list twice, a new one after each write', async () => {
    const first = await created();
    assert.deepEqual(await listAll(server.url), [first]);
    assert.deepEqual(await listAll(server.url), [first]);
    assert.equal(reads.count, 1, 'the second list came from the store');
    const second = await created();
    assert.deepEqual(await listAll(server.url), [first, second]);
    assert.deepEqual(await listAll(server.url), [first, second]);
    assert.equal(reads.count, 2, 'a write did not make the list be read again, or the list after it was read twice');
  });
});
