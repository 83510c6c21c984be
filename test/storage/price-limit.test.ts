import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { MAX_PRICE_CENTS } from '../../src/catalogue/price.js';
import { openDialect, openStore } from '../../src/storage/open-store.js';
import type { StoreDialect } from '../../src/storage/dialect.js';
import { uniqueBarcode } from '../helpers/products.js';
import { STORES } from '../helpers/stores.js';

/** Runs `work` over a connection of its own, as plain SQL beside the service would. */
async function withDialect<T>(dialect: StoreDialect, work: (db: StoreDialect['db']) => Promise<T>): Promise<T> {
  try {
    return await work(dialect.db);
  } finally {
    await dialect.close();
  }
}

for (const testStore of STORES) {
  describe(`prices written by plain SQL [${testStore.name}]`, { skip: testStore.skip }, () => {
    it('are refused above the API\'s own limit, so every stored price reads back exactly', async (t) => {
      const { location, drop } = await testStore.create();
      t.after(drop);
      const store = await openStore(location);
      t.after(() => store.close());
      const product = await store.createProduct({ name: 'Gold bar', barcode: uniqueBarcode(), priceCents: 100 });

      await withDialect(openDialect(location, { poolMax: 1 }, 'serve'), async (db) => {
        // 2^53 + 1: a double cannot hold it, so it would come out as another price.
        // On SQLite a REAL fits the column too; PostgreSQL's bigint column rounds it to whole cents itself.
        const misfits = ['9007199254740993', String(MAX_PRICE_CENTS + 1), ...(location.kind === 'sqlite' ? ['12.5', '0.001'] : [])];
        for (const cents of misfits) {
          await assert.rejects(sql`UPDATE product SET price_cents = ${sql.raw(cents)} WHERE pk = ${product.pk}`.execute(db), /price_cents|product_price_limit/, cents);
          await assert.rejects(
            sql`INSERT INTO product (name, barcode, price_cents) VALUES ('Too dear', ${uniqueBarcode()}, ${sql.raw(cents)})`.execute(db),
            /price_cents|product_price_limit/,
            cents,
          );
        }
        await sql`UPDATE product SET price_cents = ${sql.raw(String(MAX_PRICE_CENTS))} WHERE pk = ${product.pk}`.execute(db);
      });
      assert.equal((await store.findProduct(product.pk))?.priceCents, MAX_PRICE_CENTS);
    });

    it('stop the migration that brings the limit while a product is above it, naming the product', async (t) => {
      const { location, drop } = await testStore.create();
      t.after(drop);
      const store = await openStore(location);
      const product = await store.createProduct({ name: 'Gold bar', barcode: uniqueBarcode(), priceCents: 100 });
      await store.close();

      // The database as the version before the limit left it, with a price plain SQL wrote then.
      const dialect = openDialect(location, { poolMax: 1 }, 'migrate');
      await withDialect(dialect, async (db) => {
        await dialect.migrations.priceLimit.down?.(db as unknown as Kysely<unknown>);
        await sql`DELETE FROM kysely_migration WHERE name = '0006_price_limit'`.execute(db);
        await sql`UPDATE product SET price_cents = 9007199254740993 WHERE pk = ${product.pk}`.execute(db);
      });
      await assert.rejects(openStore(location), {
        message: `Products have a price_cents above ${MAX_PRICE_CENTS} or not in whole cents, which the catalogue cannot keep exactly (pk ${product.pk}); correct them and migrate again.`,
      });
    });
  });
}
