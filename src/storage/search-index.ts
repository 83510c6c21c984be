import { sql, type Kysely, type RawBuilder } from 'kysely';
import { TRIGRAM_LENGTH, foldForSearch, type ProductFilter } from '../catalogue/search.js';
import type { DialectKind } from './schema.js';

/** Names folded per statement when copies are missing. */
const FOLD_BATCH = 1_000;

/**
 * Writes the folded copy of every name that has none (rows written by plain SQL, or whose name plain
 * SQL changed), in batches. A row whose name changes meanwhile keeps its cleared copy for the next call.
 *
 * @returns how many rows were folded.
 */
export async function foldPendingNames(db: Kysely<unknown>, dialect: DialectKind): Promise<number> {
  if ((await pendingNames(db, dialect, 1)).length === 0) return 0;
  // One transaction for all of them: SQLite's FTS5 then merges its index once, not once per batch.
  return db.transaction().execute(async (trx) => {
    let folded = 0;
    for (;;) {
      const rows = await pendingNames(trx, dialect, FOLD_BATCH);
      if (rows.length === 0) return folded;
      // The list of pks lets SQLite find the rows by key instead of joining the whole table to the values.
      const values = rows.map((row) =>
        dialect === 'sqlite'
          ? sql`(${Number(row.pk)}, ${row.name}, ${foldForSearch(row.name)})`
          : sql`(cast(${String(row.pk)} as bigint), cast(${row.name} as text), cast(${foldForSearch(row.name)} as text))`,
      );
      await sql`
        UPDATE product SET name_folded = f.folded
        FROM (SELECT column1 AS pk, column2 AS name, column3 AS folded FROM (VALUES ${sql.join(values)}) AS v) AS f
        WHERE product.pk = f.pk AND product.name = f.name AND product.name_folded IS NULL
          AND product.pk IN (${sql.join(rows.map((row) => (dialect === 'sqlite' ? Number(row.pk) : String(row.pk))))})`.execute(trx);
      folded += rows.length;
      // Rows whose name changed between the read and the write stay unfolded: the next call folds them.
      if (rows.length < FOLD_BATCH) return folded;
    }
  });
}

/** Up to `limit` rows without a folded copy. */
async function pendingNames(db: Kysely<unknown>, dialect: DialectKind, limit: number): Promise<Array<{ pk: number | string; name: string }>> {
  // SQLite is told which index: statistics gathered while many names were unfolded would have it
  // scan the table long after they are folded.
  const { rows } = await sql<{ pk: number | string; name: string }>`
    SELECT pk, name FROM product ${sql.raw(dialect === 'sqlite' ? 'INDEXED BY product_unfolded ' : '')}WHERE name_folded IS NULL LIMIT ${sql.lit(limit)}`.execute(db);
  return rows;
}

/**
 * Where a filter's matches come from, as SQL over table `product` (every column of it is reachable):
 * the barcode through its unique index; the folded text through the trigram index (SQLite FTS5,
 * PostgreSQL pg_trgm) when it has 3 characters or more, otherwise by reading the folded names.
 * `%` and `_` are literal on every database.
 */
export interface FilterSource {
  /** The FROM clause. */
  readonly from: RawBuilder<unknown>;
  readonly where: RawBuilder<boolean>;
  /** The matches' `pk`, cheapest to compare (FTS5 hands out rowids in order). */
  readonly pk: RawBuilder<number>;
  /** What to ORDER BY for `pk` order. */
  readonly order: RawBuilder<number>;
  /** A cheaper FROM and WHERE that count the same matches. */
  readonly count: RawBuilder<unknown>;
  /** Whether every folded name is read: the text is too short for a trigram index. */
  readonly readsEveryName: boolean;
}

/** The matches of `filter` on `dialect`'s database. */
export function filterSource(filter: ProductFilter, dialect: DialectKind): FilterSource {
  const text = filter.search;
  const plain = (where: RawBuilder<boolean>, readsEveryName: boolean): FilterSource => ({
    from: sql`product`,
    where,
    pk: sql`product.pk`,
    // PostgreSQL would otherwise walk the pk index, reading every row until enough match: a full
    // scan for a rare name or a barcode. Sorting the few matches the index finds is cheaper.
    order: dialect === 'postgres' ? sql`product.pk + 0` : sql`product.pk`,
    count: sql`product WHERE ${where}`,
    readsEveryName,
  });
  const contains = (text: string): RawBuilder<boolean> =>
    dialect === 'sqlite' ? sql`instr(product.name_folded, ${text}) > 0` : sql`strpos(product.name_folded, ${text}) > 0`;
  if (filter.barcode !== undefined) {
    // One row at most: a plain check of the name beats any index.
    const byBarcode = sql<boolean>`product.barcode = ${filter.barcode}`;
    return plain(text === undefined ? byBarcode : sql<boolean>`${byBarcode} AND ${contains(text)}`, false);
  }
  if (text === undefined) return plain(sql<boolean>`1 = 1`, false);
  const short = [...text].length < TRIGRAM_LENGTH;
  if (dialect === 'postgres') return plain(sql<boolean>`product.name_folded LIKE ${`%${text.replace(/[\\%_]/g, '\\$&')}%`}`, short);
  if (short) return plain(contains(text), true);
  // A phrase in FTS5's syntax: the text in double quotes, each of its own double quotes doubled.
  const match = sql<boolean>`product_search MATCH ${`"${text.replaceAll('"', '""')}"`}`;
  return {
    from: sql`product_search JOIN product ON product.pk = product_search.rowid`,
    where: match,
    pk: sql`product_search.rowid`,
    order: sql`product_search.rowid`,
    count: sql`product_search WHERE ${match}`,
    readsEveryName: false,
  };
}
