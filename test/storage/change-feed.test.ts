import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import type { NewProduct } from '../../src/catalogue/product.js';
import { openStore } from '../../src/storage/open-store.js';
import type { DatabaseLocation } from '../../src/config.js';
import type { CatalogueStore, Change } from '../../src/storage/store.js';
import { MAX_PRICE_CENTS } from '../../src/catalogue/price.js';
import { changeWire } from '../../src/http/contract/wire.js';
import { describeEachStore } from '../helpers/each-store.js';
import { migratedUpTo } from '../helpers/migrated-up-to.js';
import { outsideSql, withClient } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedProducts } from '../helpers/store-contents.js';
import { CONTRACT_STORES, postgres, sqlite, type TestStore } from '../helpers/stores.js';

function newProduct(name: string, priceCents = 100): NewProduct {
  return { name, barcode: uniqueBarcode(), priceCents };
}

/** A store over a new empty database, with where it is, closed and dropped after test `t`. */
async function freshStoreWithLocation(testStore: TestStore, t: TestContext): Promise<{ store: CatalogueStore; location: DatabaseLocation }> {
  const { location, drop } = await testStore.create();
  const store = await openStore(location, testStore.storeOptions);
  t.after(async () => {
    await store.close();
    await drop();
  });
  return { store, location };
}

/** Every change after `since`, read `limit` at a time as a client following the feed would. */
async function changesSince(store: CatalogueStore, since: number, limit = 2): Promise<{ version: number; changes: Change[] }> {
  const changes: Change[] = [];
  for (let after = since; ; ) {
    const page = await store.readChanges(after, limit);
    changes.push(...page.changes);
    if (!page.more) return { version: page.version, changes };
    after = page.changes.at(-1)!.version;
  }
}

describeEachStore('versions and the change feed', { env: false, stores: CONTRACT_STORES }, (ctx) => {
  const freshStore = (t: TestContext) => freshStoreWithLocation(ctx.testStore, t);
  it('starts at version 0 with no changes', async (t) => {
    const { store } = await freshStore(t);
    const { catalogue } = await store.readChanges(0, 10);
    assert.match(catalogue, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual(await store.readChanges(0, 10), { catalogue, version: 0, changes: [], more: false });
    assert.equal((await store.describeCatalogue()).version, 0);
  });

  it('keeps its identity through writes, and gives every page a new one once told (a restore behind its back)', async (t) => {
    const { store } = await freshStore(t);
    const { catalogue } = await store.readChanges(0, 10);
    const product = await store.createProduct(newProduct('Espresso'));
    assert.equal((await store.readChanges(0, 10)).catalogue, catalogue);
    const renewed = await store.renewCatalogueId();
    assert.notEqual(renewed, catalogue);
    assert.deepEqual(await store.readChanges(0, 10), { catalogue: renewed, version: 1, changes: [{ version: 1, pk: product.pk, product }], more: false });
    assert.equal((await store.readChangesJson(1, 10)).catalogue, renewed);
    // Another database is another catalogue.
    assert.notEqual((await (await freshStore(t)).store.readChanges(0, 1)).catalogue, renewed);
  });

  it('gives every stored product the next version, in order, read a page at a time', async (t) => {
    const { store } = await freshStore(t);
    const first = await store.createProduct(newProduct('Espresso'));
    const second = await store.createProduct(newProduct('Tea'));
    const third = await store.createProduct(newProduct('Milk'));
    const page = await store.readChanges(0, 2);
    const { catalogue } = page;
    assert.deepEqual(page, {
      catalogue,
      version: 3,
      changes: [
        { version: 1, pk: first.pk, product: first },
        { version: 2, pk: second.pk, product: second },
      ],
      more: true,
    });
    assert.deepEqual(await store.readChanges(2, 2), { catalogue, version: 3, changes: [{ version: 3, pk: third.pk, product: third }], more: false });
    assert.deepEqual(await store.readChanges(3, 2), { catalogue, version: 3, changes: [], more: false });
    assert.equal((await store.describeCatalogue()).version, 3);
  });

  it('gives a product changed by plain SQL a new version, and none for an update that changes nothing', async (t) => {
    const { store, location } = await freshStore(t);
    const espresso = await store.createProduct(newProduct('Espresso', 1299));
    const tea = await store.createProduct(newProduct('Tea', 350));
    await outsideSql(location, `UPDATE product SET price_cents = 1399 WHERE pk = ${espresso.pk}`);
    // The same values again, and a folded copy alone: no change to the product.
    await outsideSql(location, `UPDATE product SET price_cents = 350, name = 'Tea' WHERE pk = ${tea.pk}`);
    await outsideSql(location, `UPDATE product SET name_folded = NULL WHERE pk = ${tea.pk}`);
    // A search folds the name again: no change either.
    assert.equal(await store.countMatching({ search: 'tea' }), 1);
    assert.deepEqual(await changesSince(store, 2), { version: 3, changes: [{ version: 3, pk: espresso.pk, product: { ...espresso, priceCents: 1399 } }] });
  });

  it('gives a product moved to another pk by plain SQL as removed at its old pk and stored at its new one, found there by a search', async (t) => {
    const { store, location } = await freshStore(t);
    // PostgreSQL's pk is an identity that plain SQL can only set to its next value; SQLite's pk is the
    // rowid, which an UPDATE may name in four ways.
    // (A pk moved to is past every pk so far, so the next product is drawn past it.)
    const moves = location.kind === 'postgres' ? ['pk = DEFAULT'] : ['pk', 'rowid', '_rowid_', 'oid'].map((name) => `${name} = pk + 100`);
    for (const move of moves) {
      const product = await store.createProduct(newProduct(`Moved Mango ${move}`));
      const { version } = await store.describeCatalogue();
      await outsideSql(location, `UPDATE product SET ${move} WHERE pk = ${product.pk}`);
      const [moved] = await store.listFilteredAfter({ barcode: product.barcode }, 0, 10);
      assert.ok(moved !== undefined && moved.pk !== product.pk, move);
      assert.deepEqual(await changesSince(store, version), {
        version: version + 2,
        changes: [
          { version: version + 1, pk: product.pk, product: undefined },
          { version: version + 2, pk: moved.pk, product: moved },
        ],
      }, move);
      // The store takes a search text folded, as the API hands it over.
      const search = `mango ${move}`.toLowerCase();
      assert.deepEqual((await store.readFilteredPage({ search }, 0, 10, 1000)).products, [moved], move);
      assert.equal(await store.countMatching({ search }), 1, move);
    }
    // A whole copy has every moved product, at its new pk, and nothing else.
    const copy = (await changesSince(store, 0, 100)).changes;
    assert.deepEqual(copy.map((change) => change.product), await storedProducts(store));
    assert.equal(copy.length, moves.length);
  });

  it('versions every row a statement changes, and a removal keeps its version with no product', async (t) => {
    const { store, location } = await freshStore(t);
    const products = [];
    for (const name of ['A', 'B', 'C', 'D']) products.push(await store.createProduct(newProduct(name, 100)));
    const [a, b, c, d] = products as [(typeof products)[number], (typeof products)[number], (typeof products)[number], (typeof products)[number]];
    await outsideSql(location, `UPDATE product SET price_cents = price_cents + 1 WHERE pk IN (${a.pk}, ${c.pk}, ${d.pk})`);
    await outsideSql(location, `DELETE FROM product WHERE pk IN (${b.pk}, ${d.pk})`);
    const { version, changes } = await changesSince(store, 4);
    assert.equal(version, 9);
    // Each product once, in its state now, in the order of its last change.
    assert.deepEqual(
      changes.map((change) => [change.pk, change.product?.priceCents]),
      [
        [a.pk, 101],
        [c.pk, 101],
        [b.pk, undefined],
        [d.pk, undefined],
      ],
    );
    assert.deepEqual(
      changes.map((change) => change.version),
      [5, 6, 8, 9],
    );
    // A new copy has nothing to remove: from 0, removed products are left out.
    assert.deepEqual(
      (await changesSince(store, 0)).changes.map((change) => change.pk),
      [a.pk, c.pk],
    );
    assert.deepEqual(await store.describeCatalogue().then(({ count, version }) => ({ count, version })), { count: 2, version: 9 });
    assert.deepEqual(
      (await storedProducts(store)).map((product) => product.pk),
      [a.pk, c.pk],
    );
  });

  it('writes a page as JSON with the same changes as it reads them, names and prices of every kind and removals included', async (t) => {
    const { store, location } = await freshStore(t);
    const names = ['Plain', 'Quote " and \\ backslash', 'Line\nbreak\ttab\u0001\u001f\u007f', 'Café crème', '🍵 Tea', '\u2028\u2029', '</script>'];
    const prices = [0, 5, 10, 99, 100, 1_234_567, MAX_PRICE_CENTS];
    const products = [];
    for (const [i, name] of names.entries()) products.push(await store.createProduct(newProduct(name, prices[i])));
    await outsideSql(location, `UPDATE product SET price_cents = 7 WHERE pk = ${products[0]!.pk}`);
    await outsideSql(location, `DELETE FROM product WHERE pk = ${products[2]!.pk}`);
    if (location.kind === 'sqlite') {
      // SQLite keeps a BLOB or a number written into a text column as such: read as text all the same.
      await outsideSql(location, "INSERT INTO product (name, barcode, price_cents) VALUES (X'426C6F6220C3A9', X'30303030303032303030313435', 2), (42, 4006381333931, 3)");
    }
    const { version } = await store.describeCatalogue();
    for (const since of [0, 1, 3, version - 1, version]) {
      for (const limit of [1, 2, 5, 100]) {
        const rows = await store.readChanges(since, limit);
        const json = await store.readChangesJson(since, limit);
        const text = typeof json.changesJson === 'string' ? json.changesJson : Buffer.from(json.changesJson).toString();
        assert.deepEqual(JSON.parse(text), rows.changes.map(changeWire), `since=${since} limit=${limit}`);
        assert.deepEqual({ version: json.version, more: json.more, last: json.lastVersion }, { version: rows.version, more: rows.more, last: rows.changes.at(-1)?.version });
      }
    }
    if (location.kind === 'sqlite') {
      const stored = (await store.readChanges(version - 2, 10)).changes.map((change) => change.product);
      assert.deepEqual(stored.map((product) => [product?.name, product?.barcode]), [
        ['Blob é', '0000002000145'],
        ['42', '4006381333931'],
      ]);
    }
  });

  it('lets plain SQL remove a product created with an idempotency key', async (t) => {
    const { store, location } = await freshStore(t);
    const product = await store.createKeyedProduct(newProduct('Keyed'), { key: 'remove-me', fingerprint: 'f', createdAt: new Date() }, new Date(0));
    await outsideSql(location, `DELETE FROM product WHERE pk = ${product.pk}`);
    assert.equal(await store.findProduct(product.pk), undefined);
    assert.deepEqual((await store.readChanges(1, 10)).changes, [{ version: 2, pk: product.pk, product: undefined }]);
  });
});

describeEachStore('the change feed on a catalogue from before versions', { env: false }, (ctx) => {
  it('gives the products already stored versions 1..count in pk order', async (t) => {
    const { location, drop } = await ctx.testStore.create();
    t.after(drop);
    await migratedUpTo(location, '0006_price_limit');
    await outsideSql(location, "INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ('One', 'one', '4006381333931', 100), ('Two', 'two', '3017620422003', 200)");
    await outsideSql(location, "DELETE FROM product WHERE name = 'One'");
    await outsideSql(location, "INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ('Three', 'three', '4006381333931', 300)");
    const store = await openStore(location);
    t.after(() => store.close());
    const page = await store.readChanges(0, 10);
    assert.deepEqual(
      page.changes.map(({ version, product }) => [version, product?.name]),
      [
        [1, 'Two'],
        [2, 'Three'],
      ],
    );
    assert.deepEqual(await store.describeCatalogue().then(({ count, version }) => ({ count, version })), { count: 2, version: 2 });
  });
});

describeEachStore('a catalogue whose products plain SQL moved to other pks before 0017', { env: false, stores: [sqlite] }, (ctx) => {
  it('finds them at their new pks once migrated, and finds nothing at the old ones', async (t) => {
    const { location, drop } = await ctx.testStore.create();
    t.after(drop);
    await migratedUpTo(location, '0016_search_column');
    await outsideSql(location, "INSERT INTO product (name, name_folded, barcode, price_cents) VALUES ('Mango', 'mango', '4006381333931', 100), ('Mango juice', 'mango juice', '3017620422003', 200)");
    await outsideSql(location, 'UPDATE product SET rowid = 50 WHERE pk = 1');
    const store = await openStore(location);
    t.after(() => store.close());
    assert.deepEqual((await store.readFilteredPage({ search: 'mango' }, 0, 10, 1000)).products.map((product) => [product.pk, product.name]), [
      [2, 'Mango juice'],
      [50, 'Mango'],
    ]);
    assert.equal(await store.countMatching({ search: 'ngo' }), 2);
  });
});

describeEachStore('migration 0017 undone and done again', { env: false }, (ctx) => {
  it('leaves the triggers of 0016, then tells a moved pk again', async (t) => {
    const { location, drop } = await ctx.testStore.create();
    t.after(drop);
    await (await openStore(location)).close();
    await migratedUpTo(location, '0016_search_column');
    const store = await openStore(location);
    t.after(() => store.close());
    const product = await store.createProduct(newProduct('Papaya'));
    await outsideSql(location, `UPDATE product SET ${location.kind === 'postgres' ? 'pk = DEFAULT' : 'pk = pk + 100'} WHERE pk = ${product.pk}`);
    const [moved] = await store.listFilteredAfter({ barcode: product.barcode }, 0, 10);
    assert.deepEqual((await changesSince(store, 1)).changes, [
      { version: 2, pk: product.pk, product: undefined },
      { version: 3, pk: moved!.pk, product: moved },
    ]);
    assert.deepEqual((await store.readFilteredPage({ search: 'papaya' }, 0, 10, 1000)).products, [moved]);
  });
});

describeEachStore('versions under concurrent writers', { env: false, stores: [postgres] }, (ctx) => {
  const freshStore = (t: TestContext) => freshStoreWithLocation(ctx.testStore, t);
  it('makes a writer wait for the transaction that drew versions before it, so versions follow commit order', async (t) => {
    const { store, location } = await freshStore(t);
    const first = await store.createProduct(newProduct('First'));
    const second = await store.createProduct(newProduct('Second'));
    const { url } = location as { url: string };
    await withClient(url, async (holder) => {
      await holder.query('BEGIN');
      await holder.query(`UPDATE product SET price_cents = 500 WHERE pk = ${first.pk}`);
      // Another writer, on another product, must wait until the first commits.
      const other = withClient(url, (client) => client.query(`UPDATE product SET price_cents = 600 WHERE pk = ${second.pk}`));
      await waitForLockWaiter(url, `UPDATE product SET price_cents = 600 WHERE pk = ${second.pk}`);
      // Meanwhile a reader sees neither change.
      assert.deepEqual((await store.readChanges(2, 10)).changes, []);
      await holder.query('COMMIT');
      await other;
    });
    assert.deepEqual(
      (await store.readChanges(2, 10)).changes.map(({ version, pk }) => [version, pk]),
      [
        [3, first.pk],
        [4, second.pk],
      ],
    );
  });

  it('keeps its bookkeeping to one update of the state per statement, whatever the rows', async (t) => {
    const { store, location } = await freshStore(t);
    const { url } = location as { url: string };
    // The updates a transaction made to catalogue_state, read inside it (counts of the transaction itself).
    const stateUpdates = (rows: number) =>
      withClient(url, async (client) => {
        await client.query('BEGIN');
        await client.query(
          `INSERT INTO product (name, name_folded, barcode, price_cents)
           SELECT 'Bulk ' || n, 'bulk ' || n, lpad((${rows * 10} + n)::text, 13, '9'), n FROM generate_series(1, ${rows}) AS n`,
        );
        await client.query('UPDATE product SET price_cents = price_cents + 1');
        await client.query('DELETE FROM product');
        const { rows: stats } = await client.query<{ updates: string }>(
          "SELECT n_tup_upd AS updates FROM pg_stat_xact_user_tables WHERE relid = 'catalogue_state'::regclass",
        );
        await client.query('ROLLBACK');
        return Number(stats[0]?.updates);
      });
    assert.deepEqual([await stateUpdates(1_000), await stateUpdates(4_000)], [3, 3]);
  });

  it('removes every product on TRUNCATE, each with a version', async (t) => {
    const { store, location } = await freshStore(t);
    const first = await store.createProduct(newProduct('First'));
    const second = await store.createProduct(newProduct('Second'));
    await outsideSql(location, 'TRUNCATE product');
    assert.deepEqual(await store.readChanges(2, 10), {
      catalogue: (await store.readChanges(0, 1)).catalogue,
      version: 4,
      changes: [
        { version: 3, pk: first.pk, product: undefined },
        { version: 4, pk: second.pk, product: undefined },
      ],
      more: false,
    });
    assert.equal((await store.describeCatalogue()).count, 0);
  });
});

/** Resolves once a connection running a statement like `pattern` waits for the catalogue's write lock. */
async function waitForLockWaiter(url: string, pattern: string): Promise<void> {
  await withClient(url, async (client) => {
    for (;;) {
      const { rows } = await client.query(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE $1",
        [pattern],
      );
      if (Number(rows[0].n) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  });
}
