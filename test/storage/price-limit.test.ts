import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { MAX_PRICE_CENTS } from '../../src/catalogue/price.js';
import type { DatabaseLocation } from '../../src/config.js';
import { openStore } from '../../src/storage/open-store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { migratedUpTo } from '../helpers/migrated-up-to.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';

describeEachStore('prices written by plain SQL', { env: false }, (ctx) => {
  /** A fresh database migrated up to the version before the price limit. */
  async function catalogueBeforeTheLimit(t: TestContext): Promise<DatabaseLocation> {
    const { location } = await ctx.freshDatabase(t);
    await migratedUpTo(location, '0005_product_search');
    return location;
  }

  it('are refused above the API\'s own limit, so every stored price reads back exactly', async (t) => {
    const { location, open } = await ctx.freshDatabase(t);
    const store = await open();
    const product = await store.createProduct({ name: 'Gold bar', barcode: uniqueBarcode(), priceCents: 100 });

    // 2^53 + 1: a double cannot hold it, so it would come out as another price.
    // On SQLite a REAL fits the column too; PostgreSQL's bigint column rounds it to whole cents itself.
    const misfits = ['9007199254740993', String(MAX_PRICE_CENTS + 1), ...(location.kind === 'sqlite' ? ['12.5', '0.001'] : [])];
    for (const cents of misfits) {
      await assert.rejects(outsideSql(location, `UPDATE product SET price_cents = ${cents} WHERE pk = $1`, [product.pk]), /price_cents|product_price_limit/, cents);
      await assert.rejects(
        outsideSql(location, `INSERT INTO product (name, barcode, price_cents) VALUES ('Too dear', $1, ${cents})`, [uniqueBarcode()]),
        /price_cents|product_price_limit/,
        cents,
      );
    }
    await outsideSql(location, `UPDATE product SET price_cents = ${MAX_PRICE_CENTS} WHERE pk = $1`, [product.pk]);
    assert.equal((await store.findProduct(product.pk))?.priceCents, MAX_PRICE_CENTS);
  });

  it('stop the migration that brings the limit while a product is above it, naming the product', async (t) => {
    // The database as the version before the limit left it, with a price plain SQL wrote then.
    const location = await catalogueBeforeTheLimit(t);
    const [row] = await outsideSql<{ pk: number | string }>(location, "INSERT INTO product (name, barcode, price_cents) VALUES ('Gold bar', $1, 9007199254740993) RETURNING pk", [uniqueBarcode()]);
    await assert.rejects(openStore(location), {
      message: `Products have a price_cents above ${MAX_PRICE_CENTS} or not in whole cents, which the catalogue cannot keep exactly (pk ${row!.pk}); correct them and migrate again.`,
    });
  });

  it('name the first ten products above the limit and say how many more there are', async (t) => {
    const location = await catalogueBeforeTheLimit(t);
    const pks: string[] = [];
    for (let n = 0; n < 13; n++) {
      const [row] = await outsideSql<{ pk: number | string }>(location, "INSERT INTO product (name, barcode, price_cents) VALUES ('Gold bar', $1, 9007199254740993) RETURNING pk", [uniqueBarcode()]);
      pks.push(String(row!.pk));
    }
    await assert.rejects(openStore(location), {
      message: `Products have a price_cents above ${MAX_PRICE_CENTS} or not in whole cents, which the catalogue cannot keep exactly (pk ${pks.slice(0, 10).join(', ')} and 3 more); correct them and migrate again.`,
    });
  });
});
