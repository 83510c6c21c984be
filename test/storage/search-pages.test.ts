import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { NewProduct, Product } from '../../src/catalogue/product.js';
import { foldForSearch } from '../../src/catalogue/search.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { migratedUpTo } from '../helpers/migrated-up-to.js';
import { postgres } from '../helpers/stores.js';
import { outsideSql, withClient } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';

/**
 * Names where a search across words can go wrong: PostgreSQL's index reads a name with its spaces as
 * the letter `q`, so `aqb` and `a b` look alike to it; `0,2 l` has a comma; most names hold `tea`, a
 * few `rare`.
 */
function catalogue(): NewProduct[] {
  const names: string[] = [];
  for (let n = 1; n <= 400; n += 1) {
    const word = n % 80 === 0 ? 'rare' : n % 4 === 0 ? 'coffee' : 'tea';
    const joint = ['a b', 'aqb', 'a  b', 'A B'][n % 4]!;
    names.push(`${joint} ${word} ${n} 0,${n % 3} l`);
  }
  return names.map((name) => ({ name, barcode: uniqueBarcode(), priceCents: 100 }));
}

/** A bound on the count that no catalogue here reaches: the count is exact. */
const EVERY_MATCH = Number.MAX_SAFE_INTEGER;

async function* inOneBatch<T>(items: readonly T[]): AsyncIterable<readonly T[]> {
  yield items;
}

/** Every product of `store`, lowest pk first. */
async function everyProduct(store: CatalogueStore): Promise<Product[]> {
  return store.listProductsAfter(0, 10_000);
}

describeEachStore('pages of a search', { env: false }, (ctx) => {
  it('are the matches in pk order at every offset, whether the matches are many or few, across words and commas', async (t) => {
    const store = await ctx.freshStore(t);
    await store.insertProducts(inOneBatch(catalogue()));
    const products = await everyProduct(store);
    const { revision } = await store.describeCatalogue();
    // `tea` matches 300 of 400: the first pages walk the pks, the last are sorted (see search-reads.ts).
    // Texts whose parts are each in many names but together in few or none (`rare 16`, `zzz tea`).
    for (const text of ['tea', 'rare', 'a b', 'aqb', 'a  b', 'b tea', 'b tea 1', ' 0,1 l', 'q', 'zzz', 'rare 16', 'coffee 12', 'a b rare', 'zzz tea']) {
      const search = foldForSearch(text.trim());
      const matches = products.filter((p) => foldForSearch(p.name).includes(search));
      assert.equal(await store.countMatching({ search }), matches.length, text);
      // Counted exactly, and to bounds below and around the matches: `tea` (300) past 101 and 251 is walked
      // or counted through the index, and its page after the bound is read either way.
      for (const countAtMost of [EVERY_MATCH, 101, 251, matches.length, matches.length + 1]) {
        for (const [offset, limit] of [[0, 20], [0, 1], [100, 20], [250, 20], [matches.length - 5, 20], [matches.length, 20], [0, matches.length + 1]] as const) {
          if (offset < 0) continue;
          assert.deepEqual(
            await store.readFilteredPage({ search }, offset, limit, countAtMost),
            { count: Math.min(matches.length, countAtMost), revision, products: matches.slice(offset, offset + limit) },
            `${JSON.stringify(text)} at ${offset}, ${limit}, counted to ${countAtMost}`,
          );
        }
      }
      assert.deepEqual(await store.listFilteredAfter({ search }, 0, 10_000), matches, text);
      // In batches after a pk, as the v1 list streams a long list.
      const batched: Product[] = [];
      for (let batch = await store.listFilteredAfter({ search }, 0, 7); batch.length > 0; batch = await store.listFilteredAfter({ search }, batch.at(-1)!.pk, 7)) {
        batched.push(...batch);
      }
      assert.deepEqual(batched, matches, `${JSON.stringify(text)} in batches`);
    }
  });

  // 0010 took the index's trigrams across spaces, 0013 across every other character that is not a letter or a digit;
  // 0016 keeps what the index reads in a column of its own.
  for (const before of ['0009_search_index_on_change', '0012_pk_bound', '0015_pk_range']) {
    it(`find names across words, hyphens and commas in a catalogue migrated from ${before}`, async (t) => {
      const { location, open } = await ctx.freshDatabase(t);
      await migratedUpTo(location, before);
      // Written by plain SQL before the migration, folded copies and all, as the service of then wrote them.
      for (const name of ['Crème brûlée 0,2 l', 'Earl grey tea', 'Grey earl', 'Bohrer KX-4821 Typ 3', 'Bohrer KX-4822']) {
        await outsideSql(location, 'INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ($1, $2, $3, 100)', [name, foldForSearch(name), uniqueBarcode()]);
      }
      const store = await open();
      const names = async (search: string): Promise<string[]> => (await store.readFilteredPage({ search }, 0, 10, EVERY_MATCH)).products.map((p) => p.name);
      assert.deepEqual(await names('e brulee 0,2'), ['Crème brûlée 0,2 l']);
      assert.deepEqual(await names('0,2 l'), ['Crème brûlée 0,2 l']);
      assert.deepEqual(await names('l grey t'), ['Earl grey tea']);
      assert.deepEqual(await names('grey'), ['Earl grey tea', 'Grey earl']);
      assert.deepEqual(await names('kx-4821'), ['Bohrer KX-4821 Typ 3']);
      assert.deepEqual(await names('x-482'), ['Bohrer KX-4821 Typ 3', 'Bohrer KX-4822']);
      // A hyphen is not any character: the letter that stands in for it in the index finds nothing.
      assert.deepEqual(await names('kxq4821'), []);
      await store.createProduct({ name: 'Grey tea', barcode: uniqueBarcode(), priceCents: 100 });
      assert.deepEqual(await names('y t'), ['Earl grey tea', 'Grey tea']);
      await store.createProduct({ name: 'Säge KX-4821/2', barcode: uniqueBarcode(), priceCents: 100 });
      assert.deepEqual(await names('kx-4821'), ['Bohrer KX-4821 Typ 3', 'Säge KX-4821/2']);
      assert.deepEqual(await names('4821/2'), ['Säge KX-4821/2']);
    });
  }
});

describeEachStore('the migrations to trigrams across words', { env: false, stores: [postgres] }, (ctx) => {
  it('a search finds its candidates through the trigram index over the column 0016 added', async (t) => {
    const { location, open } = await ctx.freshDatabase(t);
    if (location.kind !== 'postgres') return;
    const store = await open();
    // One name in a hundred holds the text: few, so it is not walked in pk order (the sample says so).
    for (let i = 0; i < 99; i += 1) await store.createProduct({ name: `Green tea ${i}`, barcode: uniqueBarcode(), priceCents: 100 });
    await store.createProduct({ name: 'Grey tea, 0,5 kg', barcode: uniqueBarcode(), priceCents: 100 });
    const scans = async (): Promise<number> =>
      Number((await outsideSql<{ n: string }>(location, "SELECT idx_scan AS n FROM pg_stat_user_indexes WHERE schemaname = current_schema() AND indexrelname = 'product_name_joined_trgm'"))[0]!.n);
    const before = await scans();
    assert.deepEqual((await store.readFilteredPage({ search: 'a, 0,5' }, 0, 10, EVERY_MATCH)).products.map((p) => p.name), ['Grey tea, 0,5 kg']);
    // A backend reports its statistics at the latest as it ends: the store's connections end with it.
    await store.close();
    await until(async () => (await scans()) > before);
  });

  it('0016 undone leaves 0013\'s index over the expression, and done again finds the names written meanwhile', async (t) => {
    const { location, open } = await ctx.freshDatabase(t);
    if (location.kind !== 'postgres') return;
    const store = await open();
    await store.createProduct({ name: 'Earl grey tea', barcode: uniqueBarcode(), priceCents: 100 });
    await store.close();
    // This test's schema only: other tests' catalogues share the database.
    const indexes = async (): Promise<string[]> =>
      (await outsideSql<{ name: string }>(location, "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'product' AND indexdef LIKE '% USING gin %' ORDER BY 1")).map((row) => row.name);
    const joinedColumn = async (): Promise<number> =>
      (await outsideSql<{ n: number }>(location, "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'product' AND column_name = 'name_joined'"))[0]!.n;
    assert.deepEqual(await indexes(), ['product_name_joined_trgm']);
    await migratedUpTo(location, '0015_pk_range');
    assert.deepEqual(await indexes(), ['product_name_folded_words_trgm']);
    assert.equal(await joinedColumn(), 0);
    // Written by the version before, then read by this one: the column is computed for every row as it is added.
    await outsideSql(location, 'INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ($1, $2, $3, 100)', ['Grey tea, 0,5 kg', foldForSearch('Grey tea, 0,5 kg'), uniqueBarcode()]);
    const again = await open();
    assert.deepEqual(await indexes(), ['product_name_joined_trgm']);
    assert.deepEqual((await again.readFilteredPage({ search: 'y t' }, 0, 10, EVERY_MATCH)).products.map((p) => p.name), ['Earl grey tea', 'Grey tea, 0,5 kg']);
    assert.deepEqual((await again.readFilteredPage({ search: 'a, 0,5' }, 0, 10, EVERY_MATCH)).products.map((p) => p.name), ['Grey tea, 0,5 kg']);
  });

  for (const before of ['0009_search_index_on_change', '0012_pk_bound', '0015_pk_range', '0016_search_column']) {
    it(`from ${before}, waits for a writer of the version before it instead of ending in a deadlock`, async (t) => {
      const { location, open } = await ctx.freshDatabase(t);
      if (location.kind !== 'postgres') return;
      await migratedUpTo(location, before);
      const insert = 'INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ($1, $1, $2, 100)';
      await outsideSql(location, insert, ['earl grey', uniqueBarcode()]);
      await withClient(location.url, async (writer) => {
        // A writer of the previous version in the middle of a transaction that has read the products:
        // the migration waits for it, and its next write must not find the migration in its way.
        await writer.query('BEGIN');
        await writer.query('SELECT count(*) FROM product');
        const migrated = open();
        migrated.catch(() => undefined);
        await until(async () => {
          const [row] = await outsideSql<{ waiting: boolean }>(location, "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.oid = 'product'::regclass AND NOT l.granted) AS waiting");
          return row?.waiting === true;
        });
        await writer.query(insert, ['grey tea', uniqueBarcode()]);
        await writer.query('COMMIT');
        const store = await migrated;
        assert.deepEqual((await store.readFilteredPage({ search: 'y t' }, 0, 10, EVERY_MATCH)).products.map((p) => p.name), ['grey tea']);
        assert.equal((await store.describeCatalogue()).count, 2);
      });
    });
  }
});

/** Resolves once `check` holds, asking every 20 ms for at most 10 s. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (const started = Date.now(); !(await check()); ) {
    if (Date.now() - started > 10_000) throw new Error('the condition did not come about within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
