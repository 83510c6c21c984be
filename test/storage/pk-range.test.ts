import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MAX_PK } from '../../src/catalogue/product.js';
import { openStore } from '../../src/storage/open-store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { migratedUpTo } from '../helpers/migrated-up-to.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';

/** 2^53 + 1, as text: as a JavaScript number it would be 2^53. */
const BEYOND = '9007199254740993';

/** An insert with its own pk, as plain SQL writes one (PostgreSQL's identity takes one only when told). */
function insertWithPk(kind: 'sqlite' | 'postgres', pk: string): string {
  return `INSERT INTO product (pk, name, barcode, price_cents) ${kind === 'postgres' ? 'OVERRIDING SYSTEM VALUE ' : ''}VALUES (${pk}, 'Odd pk', $1, 100)`;
}

describeEachStore('pks written by plain SQL', { env: false }, (ctx) => {
  it('are refused outside 1 to 2^53 - 1, in an insert and in an update, so every product is listed and read back exactly', async (t) => {
    const { location, open } = await ctx.freshDatabase(t);
    const store = await open();
    const product = await store.createProduct({ name: 'Plain', barcode: uniqueBarcode(), priceCents: 100 });

    // 2^53 + 1 no client reads back exactly; a pk below 1 the lists, read after pk 0, would never reach.
    for (const pk of [BEYOND, '0', '-5']) {
      // PostgreSQL's identity takes no UPDATE of pk at all.
      await assert.rejects(outsideSql(location, `UPDATE product SET pk = ${pk} WHERE pk = $1`, [product.pk]), /product_pk_range|can only be updated to DEFAULT/, pk);
      await assert.rejects(outsideSql(location, insertWithPk(location.kind, pk), [uniqueBarcode()]), /product_pk_range|pk_bound/, pk);
      // On SQLite pk is the rowid, which an UPDATE may set by its other names.
      if (location.kind === 'sqlite') {
        for (const alias of ['rowid', '_rowid_', 'oid']) {
          await assert.rejects(outsideSql(location, `UPDATE product SET ${alias} = ${pk} WHERE pk = $1`, [product.pk]), /product_pk_range/, `${alias} ${pk}`);
        }
      }
    }
    assert.deepEqual(await store.findProduct(product.pk), product);
    // The ends of the range are pks like any other.
    await outsideSql(location, insertWithPk(location.kind, String(MAX_PK)), [uniqueBarcode()]);
    await outsideSql(location, `DELETE FROM product WHERE pk = $1`, [product.pk]);
    await outsideSql(location, insertWithPk(location.kind, '1'), [uniqueBarcode()]);
    assert.deepEqual((await store.listProductsAfter(0, 10)).map((p) => p.pk), [1, MAX_PK]);
  });

  it('stop the migration that brings the range while a product is outside it, naming the product', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    // The database as the version before the range left it, with pks plain SQL gave then.
    await migratedUpTo(location, '0014_change_notice_kind');
    await outsideSql(location, insertWithPk(location.kind, '0'), [uniqueBarcode()]);
    // SQLite's trigger of 0012 refuses such an insert, but not an update.
    if (location.kind === 'postgres') await outsideSql(location, insertWithPk(location.kind, BEYOND), [uniqueBarcode()]);
    else {
      await outsideSql(location, insertWithPk(location.kind, '7'), [uniqueBarcode()]);
      await outsideSql(location, `UPDATE product SET pk = ${BEYOND} WHERE pk = 7`);
    }
    await assert.rejects(openStore(location), {
      message: `Products have a pk below 1 or above ${MAX_PK}, which no client reads back exactly (pk 0, 9007199254740993); give them pks in that range and migrate again.`,
    });
  });
});
