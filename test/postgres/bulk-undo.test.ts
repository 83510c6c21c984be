import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { StoreUnavailableError, UndoCutShortError } from '../../src/catalogue/errors.js';
import type { NewProduct } from '../../src/catalogue/product.js';
import { openStore } from '../../src/storage/open-store.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';
import { postgres } from '../helpers/stores.js';
import { postgresBehindProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import type { DatabaseLocation } from '../../src/config.js';

const product = (name: string): NewProduct => ({ name, barcode: uniqueBarcode(), priceCents: 100 });

/** A store over a fresh database holding one product, reached through a proxy that can cut it off. */
async function storeBehindProxy(t: TestContext): Promise<{ store: CatalogueStore; proxy: TcpProxy; direct: DatabaseLocation }> {
  const { proxy, direct, proxied, drop } = await postgresBehindProxy();
  t.after(drop);
  const store = await openStore({ kind: 'postgres', url: proxied });
  t.after(async () => {
    await store.close();
    await proxy.cut();
  });
  await store.insertProducts((async function* () {
    yield [product('Tea')];
  })());
  return { store, proxy, direct: { kind: 'postgres', url: direct } };
}

/** Two steps of products, then the database cut off and the file gone: the import fails and must undo both. */
function cutOffHalfWay(proxy: TcpProxy): AsyncGenerator<NewProduct[]> {
  return (async function* () {
    yield Array.from({ length: 1500 }, (_, i) => product(`Imported ${i}`));
    await proxy.cut();
    throw new Error('the file went away');
  })();
}

const stored = async (direct: DatabaseLocation): Promise<number> => (await outsideSql<{ n: number }>(direct, 'SELECT count(*)::int AS n FROM product'))[0]!.n;

describe('a failed bulk write whose undo finds the database away', { skip: postgres.skip }, () => {
  it('tries the undo again once the database is back, and leaves the catalogue as it was', async (t) => {
    const { store, proxy, direct } = await storeBehindProxy(t);
    let away: unknown;
    const importing = store.insertProducts(cutOffHalfWay(proxy), {
      onUndoRetry: (error) => {
        away = error;
        void proxy.open();
      },
    });
    await assert.rejects(importing, /the file went away/);
    assert.ok(away instanceof StoreUnavailableError, String(away));
    assert.equal(await stored(direct), 1);
    assert.deepEqual(await outsideSql(direct, 'SELECT id FROM bulk_write'), []);
  });

  it('says the undo was cut short when the database stays away, and the next bulk write finishes it', async (t) => {
    const { store, proxy, direct } = await storeBehindProxy(t);
    await assert.rejects(store.insertProducts(cutOffHalfWay(proxy), { undoRetryMs: 0 }), (error: unknown) => {
      assert.ok(error instanceof UndoCutShortError);
      assert.equal(
        error.message,
        'the file went away. Undoing what had been written was cut short as well (The catalogue database is not reachable): part of it stays in the catalogue until a running service, or the next import, price list, removal or restore, finishes undoing it.',
      );
      return true;
    });
    // As the message says: part of it is still there, and the bulk write is left to be undone.
    assert.equal(await stored(direct), 1501);
    assert.equal((await outsideSql(direct, 'SELECT id FROM bulk_write')).length, 1);

    await proxy.open();
    // As once its process has not been seen alive for two minutes (this process is alive, and owns it).
    await outsideSql(direct, 'UPDATE bulk_write SET heartbeat_at = 0');
    assert.equal(await store.insertProducts((async function* () {
      yield [product('Honey')];
    })()), 1);
    assert.deepEqual((await outsideSql<{ name: string }>(direct, 'SELECT name FROM product ORDER BY pk')).map((row) => row.name), ['Tea', 'Honey']);
  });
});
