import { sql, type Kysely, type RawBuilder } from 'kysely';
import { TRIGRAM_LENGTH, foldForSearch, type ProductFilter } from '../catalogue/search.js';
import type { DialectSearch, FilterSource } from './dialect.js';

/** Names folded per statement when copies are missing. */
const FOLD_BATCH = 1_000;

/**
 * Writes the folded copy of every name that has none (rows written by plain SQL, or whose name plain
 * SQL changed), in batches. A row whose name changes meanwhile keeps its cleared copy for the next call.
 *
 * @returns how many rows were folded.
 */
export async function foldPendingNames(db: Kysely<unknown>, dialect: DialectSearch): Promise<number> {
  if ((await pendingNames(db, dialect, 1)).length === 0) return 0;
  // One transaction for all of them: SQLite's FTS5 then merges its index once, not once per batch.
  return db.transaction().execute(async (trx) => {
    let folded = 0;
    for (;;) {
      const rows = await pendingNames(trx, dialect, FOLD_BATCH);
      if (rows.length === 0) return folded;
      const values = rows.map((row) => dialect.foldedRow(row.pk, row.name, foldForSearch(row.name)));
      await sql`
        UPDATE product SET name_folded = f.folded
        FROM (SELECT column1 AS pk, column2 AS name, column3 AS folded FROM (VALUES ${sql.join(values)}) AS v) AS f
        WHERE product.pk = f.pk AND product.name = f.name AND product.name_folded IS NULL
          AND product.pk IN (${sql.join(rows.map((row) => dialect.pkParameter(row.pk)))})`.execute(trx);
      folded += rows.length;
      // Rows whose name changed between the read and the write stay unfolded: the next call folds them.
      if (rows.length < FOLD_BATCH) return folded;
    }
  });
}

/** Up to `limit` rows without a folded copy. */
async function pendingNames(db: Kysely<unknown>, dialect: DialectSearch, limit: number): Promise<Array<{ pk: number | string; name: string }>> {
  const { rows } = await sql<{ pk: number | string; name: string }>`
    SELECT pk, name FROM product ${sql.raw(dialect.unfoldedHint)}WHERE name_folded IS NULL LIMIT ${sql.lit(limit)}`.execute(db);
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
