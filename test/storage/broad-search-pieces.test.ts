import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { foldForSearch } from '../../src/catalogue/search.js';
import type { Product } from '../../src/catalogue/product.js';
import { openSqliteConnection } from '../../src/storage/sqlite/driver.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { insertManyProducts } from '../helpers/many-products.js';
import { CONTRACT_STORES } from '../helpers/stores.js';

/** A bound on the count that no catalogue here reaches: the count is exact. */
const EVERY_MATCH = Number.MAX_SAFE_INTEGER;

/** Enough products for several pieces of a broad search's read (SQLite reads 4,096 pks at a time). */
const PRODUCTS = 10_000;

/** Products written straight into the file, with gaps in the pks (a whole piece's worth among them). */
function fill(path: string): Product[] {
  const db = openSqliteConnection(path);
  try {
    db.exec('BEGIN');
    insertManyProducts(db, PRODUCTS, '3');
    db.exec('DELETE FROM product WHERE pk BETWEEN 1 AND 10 OR pk BETWEEN 3000 AND 7500 OR pk % 7 = 0');
    db.exec('COMMIT');
    return db
      .prepare<[], { pk: number; name: string; barcode: string; price_cents: number }>('SELECT pk, name, barcode, price_cents FROM product ORDER BY pk')
      .all()
      .map((row) => ({ pk: row.pk, name: row.name, barcode: row.barcode, priceCents: row.price_cents }));
  } finally {
    db.close();
  }
}

// SQLite only: the products are written straight into the file, and another connection writes between pieces.
describeEachStore('a search of every name, read in pieces', { env: false, stores: CONTRACT_STORES.filter((each) => each.kind === 'sqlite') }, (ctx) => {
  /** A store over a fresh file holding the products `fill` writes. */
  const filled = async (t: TestContext): Promise<{ store: CatalogueStore; path: string; products: Product[] }> => {
    const { location, open } = await ctx.freshDatabase(t);
    const store = await open();
    const path = location.kind === 'sqlite' ? location.path : '';
    return { store, path, products: fill(path) };
  };

  it('answers as one statement would, across pieces and gaps', async (t) => {
    const { store, products } = await filled(t);
    for (const text of ['k', 'ea']) {
      const matches = products.filter((p) => foldForSearch(p.name).includes(text));
      const { revision } = await store.describeCatalogue();
      assert.equal(await store.countMatching({ search: text }), matches.length);
      // Counted exactly, and to bounds below the matches: the pieces after the bound and the page are not read.
      for (const countAtMost of [EVERY_MATCH, 101, 1_001]) {
        for (const [offset, limit] of [[0, 5], [800, 40], [matches.length - 3, 10], [matches.length, 5], [0, matches.length + 1]] as const) {
          assert.deepEqual(await store.readFilteredPage({ search: text }, offset, limit, countAtMost), {
            count: Math.min(matches.length, countAtMost),
            revision,
            products: matches.slice(offset, offset + limit),
          }, `${text} ${offset} ${limit}, counted to ${countAtMost}`);
        }
      }
      for (const [after, limit] of [[0, 3], [2990, 5], [4000, 5], [matches.at(-2)!.pk, 5], [PRODUCTS, 5], [0, matches.length + 1]] as const) {
        assert.deepEqual(await store.listFilteredAfter({ search: text }, after, limit), matches.filter((p) => p.pk > after).slice(0, limit), `${text} after ${after}`);
      }
    }
    assert.deepEqual(await store.readFilteredPage({ search: 'zz' }, 0, 5, 1_001), { count: 0, revision: (await store.describeCatalogue()).revision, products: [] });
  });

  it('answers for one revision when another connection writes between its pieces', async (t) => {
    const { store, path, products } = await filled(t);
    const other = openSqliteConnection(path);
    try {
      // After the first piece is read and before the second: the read gives the event loop a turn there.
      const reading = store.readFilteredPage({ search: 'k' }, 0, 3, EVERY_MATCH);
      setImmediate(() => other.exec(`DELETE FROM product WHERE pk = ${products.find((p) => p.name.endsWith('milk'))!.pk}`));
      const page = await reading;
      const now = await store.readFilteredPage({ search: 'k' }, 0, 3, EVERY_MATCH);
      assert.deepEqual(page, now);
      assert.equal(page.count, products.filter((p) => p.name.endsWith('milk')).length - 1);
    } finally {
      other.close();
    }
  });
});
