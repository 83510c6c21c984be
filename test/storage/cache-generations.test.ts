import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { CatalogueStore } from '../../src/storage/store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { databaseUrl } from '../helpers/child-server.js';
import { startHeldImport } from '../helpers/held-import.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { uniqueBarcode } from '../helpers/products.js';

/** Both of a store's generations, as a cached answer would ask them. */
interface Generations {
  readonly catalogue: number;
  readonly existing: number;
}

/**
 * The generations now; on PostgreSQL once the store listens for the database's notices (the first ask
 * starts it, and until it listens, every ask reads the revision).
 */
async function generations(store: CatalogueStore): Promise<Generations> {
  let now: Generations | undefined;
  await passesWithin(10_000, async () => {
    const catalogue = store.cacheGenerationNow('catalogue');
    const existing = store.cacheGenerationNow('existing products');
    assert.ok(catalogue !== undefined && existing !== undefined, 'the store does not listen for changes yet');
    now = { catalogue, existing };
  }, 10);
  return now!;
}

// Every assertion in a polling loop names what failed: without a message, assert.ok reads the test's
// source to write one, which under a source-mapped loader blocked the event loop for seconds.
describeEachStore('cache generations: what a write is known to have changed', { env: false }, (ctx) => {
  // SQLite sees another process's commit on the next ask; PostgreSQL hears it by the database's notice,
  // milliseconds after the commit: ten seconds bound a notice that never comes.
  const withinMs = ctx.testStore.kind === 'sqlite' ? 0 : 10_000;

  it("a create of the store's own moves the catalogue's generation, not that of the products that exist", async (t) => {
    const store = await ctx.freshStore(t);
    const existing = await store.createProduct({ name: 'There before', barcode: uniqueBarcode(), priceCents: 100 });
    const before = await generations(store);
    await store.createProduct({ name: 'Added', barcode: uniqueBarcode(), priceCents: 100 });
    const after = await generations(store);
    assert.ok(after.catalogue > before.catalogue, 'a create did not move the catalogue generation');
    assert.equal(after.existing, before.existing);
    if (ctx.testStore.kind === 'postgres') {
      // The database's own notice of the create follows (it may have come already): it too tells of an addition only.
      await passesWithin(withinMs, async () => assert.ok((await generations(store)).catalogue >= before.catalogue + 2, "the database's notice of the create was not heard"));
      assert.equal((await generations(store)).existing, before.existing);
    }
    // A create refused (the barcode taken) wrote nothing: the products that exist are as they were.
    const refused = await generations(store);
    await assert.rejects(store.createProduct({ name: 'Twin', barcode: existing.barcode, priceCents: 100 }));
    assert.equal((await generations(store)).existing, refused.existing);
  });

  it("the store's own undo of a bulk write whose process died moves the generation of the products that exist with each step, even when it cannot finish", async (t) => {
    const { location, open } = await ctx.freshDatabase(t);
    const store = await open();
    await generations(store);
    const count = async (): Promise<number> => (await store.describeCatalogue()).count;
    const held = await startHeldImport(t, { env: { DATABASE_URL: databaseUrl(location) }, location, count });
    held.child.process.kill('SIGKILL');
    await held.child.exited;
    // The bulk write cannot be forgotten: the undo's steps commit, and then it fails.
    if (ctx.testStore.kind === 'postgres') {
      await outsideSql(location, "CREATE FUNCTION refuse_forgetting() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''held''; END'");
      await outsideSql(location, 'CREATE TRIGGER refuse_forgetting BEFORE DELETE ON bulk_write FOR EACH ROW EXECUTE FUNCTION refuse_forgetting()');
    } else {
      await outsideSql(location, "CREATE TRIGGER refuse_forgetting BEFORE DELETE ON bulk_write BEGIN SELECT RAISE(ABORT, 'held'); END");
    }
    // SQLite sees its own commits only as they are counted: the next ask after the trigger's is settled.
    const before = await generations(store);
    assert.equal(await count(), 1_000);
    await assert.rejects(store.undoAbandonedBulkWrites(), /held/);
    assert.equal(await count(), 0);
    assert.ok((await generations(store)).existing > before.existing, 'the undo did not move the generation of the products that exist');
  });

  const changes: ReadonlyArray<readonly [what: string, statement: string]> = [
    ['an UPDATE', 'UPDATE product SET price_cents = 250'],
    ['a DELETE', 'DELETE FROM product'],
    ['an INSERT that updates on conflict', "INSERT INTO product (name, barcode, price_cents) VALUES ('Upserted', $1, 300) ON CONFLICT (barcode) DO UPDATE SET price_cents = 300"],
    ...(ctx.testStore.kind === 'postgres' ? [['a TRUNCATE', 'TRUNCATE product CASCADE'] as const] : []),
  ];
  for (const [what, statement] of changes) {
    it(`${what} run outside the service moves the generation of the products that exist`, async (t) => {
      const { location, open } = await ctx.freshDatabase(t);
      const store = await open();
      const listening = await generations(store);
      const product = await store.createProduct({ name: 'Kept', barcode: uniqueBarcode(), priceCents: 100 });
      const before = await settledGenerations(store, listening);
      await outsideSql(location, statement, statement.includes('$1') ? [product.barcode] : []);
      await passesWithin(withinMs, async () => {
        const after = await generations(store);
        assert.ok(after.existing > before.existing, 'the generation of the products that exist did not move');
        assert.ok(after.catalogue > before.catalogue, 'the catalogue generation did not move');
      });
    });
  }

  it(`an INSERT run outside the service moves the catalogue's generation, and ${ctx.testStore.kind === 'postgres' ? 'not' : 'also'} that of the products that exist`, async (t) => {
    const { location, open } = await ctx.freshDatabase(t);
    const store = await open();
    const listening = await generations(store);
    await store.createProduct({ name: 'Kept', barcode: uniqueBarcode(), priceCents: 100 });
    const before = await settledGenerations(store, listening);
    await outsideSql(location, "INSERT INTO product (name, barcode, price_cents) VALUES ('Added outside', $1, 250)", [uniqueBarcode()]);
    await passesWithin(withinMs, async () => assert.ok((await generations(store)).catalogue > before.catalogue, 'the catalogue generation did not move'));
    const after = await generations(store);
    // PostgreSQL's notice names the statement's kind; SQLite's data_version tells only that another
    // process committed something.
    if (ctx.testStore.kind === 'postgres') assert.equal(after.existing, before.existing);
    else assert.ok(after.existing > before.existing, 'the generation of the products that exist did not move');
  });

  /**
   * The generations once the database's notice of the store's own create since `listening` has come
   * (PostgreSQL: the create and its notice each move the catalogue's generation), so that what moves
   * next is what follows.
   */
  async function settledGenerations(store: CatalogueStore, listening: Generations): Promise<Generations> {
    if (ctx.testStore.kind !== 'postgres') return generations(store);
    await passesWithin(withinMs, async () => assert.ok((await generations(store)).catalogue >= listening.catalogue + 2, "the database's notice of the create was not heard"));
    return generations(store);
  }
});
