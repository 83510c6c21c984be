import { sql, type Kysely, type RawBuilder } from 'kysely';
import { TRIGRAM_LENGTH, foldForSearch, type ProductFilter } from '../catalogue/search.js';
import type { DialectSearch, FilterSource } from './dialect.js';
import { asText } from './product-row.js';

/** Names folded per transaction when copies are missing: a short hold of the write lock each. */
export const FOLD_BATCH = 2_000;

/**
 * Writes the folded copy of up to FOLD_BATCH names that have none (rows written by plain SQL, or
 * whose name plain SQL changed), in one transaction. A row whose name changes meanwhile keeps its
 * cleared copy for the next call.
 *
 * @returns how many rows were folded: fewer than FOLD_BATCH when none are left.
 */
export async function foldNameBatch(db: Kysely<unknown>, dialect: DialectSearch): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const rows = await pendingNames(trx, dialect, FOLD_BATCH);
    if (rows.length === 0) return 0;
    // Folded as a product read reads the name; found again by the name as stored.
    const values = rows.map((row) => dialect.foldedRow(row.pk, row.name, foldForSearch(asText(row.name))));
    await sql`
      UPDATE product SET name_folded = f.folded
      FROM (SELECT column1 AS pk, column2 AS name, column3 AS folded FROM (VALUES ${sql.join(values)}) AS v) AS f
      WHERE product.pk = f.pk AND ${dialect.storedName} = f.name AND product.name_folded IS NULL
        AND product.pk IN (${sql.join(rows.map((row) => dialect.pkParameter(row.pk)))})`.execute(trx);
    return rows.length;
  });
}

/** How many names have no folded copy, counted up to `atMost` (a walk of the partial index of them). */
export async function countPendingNames(db: Kysely<unknown>, dialect: DialectSearch, atMost: number): Promise<number> {
  return (await pendingNames(db, dialect, atMost)).length;
}

/**
 * Up to `limit` rows without a folded copy, lowest pks first. The order makes PostgreSQL walk the
 * partial index of them step by step (an index scan marks the entries of rows already folded as dead
 * as it passes, so the next batch skips them), instead of reading the whole index in a bitmap scan
 * each batch, dead entries and all, until a vacuum.
 */
async function pendingNames(db: Kysely<unknown>, dialect: DialectSearch, limit: number): Promise<Array<{ pk: number | string; name: string | Uint8Array }>> {
  const { rows } = await sql<{ pk: number | string; name: string | Uint8Array }>`
    SELECT pk, ${dialect.storedName} AS name FROM product ${sql.raw(dialect.unfoldedHint)}WHERE name_folded IS NULL ORDER BY pk LIMIT ${sql.lit(limit)}`.execute(db);
  return rows;
}

/**
 * The matches of `filter`: the barcode through its unique index; the folded text through the trigram
 * index when it has 3 characters or more, otherwise by reading the folded names. `%` and `_` are
 * literal on every database.
 */
export function filterSource(filter: ProductFilter, dialect: DialectSearch): FilterSource {
  const text = filter.search;
  const plain = (where: RawBuilder<boolean>, readsEveryName: boolean): FilterSource => ({
    from: sql`product`,
    where,
    pk: sql`product.pk`,
    order: dialect.pkOrder,
    count: sql`product WHERE ${where}`,
    readsEveryName,
  });
  if (filter.barcode !== undefined) {
    // One row at most: a plain check of the name beats any index.
    const byBarcode = sql<boolean>`product.barcode = ${filter.barcode}`;
    return plain(text === undefined ? byBarcode : sql<boolean>`${byBarcode} AND ${dialect.contains(text)}`, false);
  }
  if (text === undefined) return plain(sql<boolean>`1 = 1`, false);
  return dialect.textSource(text, [...text].length < TRIGRAM_LENGTH, plain);
}
