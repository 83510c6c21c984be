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
  let folded = 0;
  for (;;) {
    const { rows } = await sql<{ pk: number | string; name: string }>`
      SELECT pk, name FROM product WHERE name_folded IS NULL ORDER BY pk LIMIT ${sql.lit(FOLD_BATCH)}`.execute(db);
    if (rows.length === 0) return folded;
    const values = rows.map((row) =>
      dialect === 'sqlite'
        ? sql`(${Number(row.pk)}, ${row.name}, ${foldForSearch(row.name)})`
        : sql`(cast(${String(row.pk)} as bigint), cast(${row.name} as text), cast(${foldForSearch(row.name)} as text))`,
    );
    await sql`
      UPDATE product SET name_folded = f.folded
      FROM (SELECT column1 AS pk, column2 AS name, column3 AS folded FROM (VALUES ${sql.join(values)}) AS v) AS f
      WHERE product.pk = f.pk AND product.name = f.name AND product.name_folded IS NULL`.execute(db);
    folded += rows.length;
    // Rows whose name changed between the read and the write stay unfolded: read them again later.
    if (rows.length < FOLD_BATCH) return folded;
  }
}

/**
 * The SQL condition, on table `product`, for `filter`: the barcode through its unique index; the
 * folded text through the trigram index (SQLite FTS5, PostgreSQL pg_trgm) when it has 3 characters or
 * more, otherwise by reading the folded names. `%` and `_` are literal on every database.
 */
export function filterCondition(filter: ProductFilter, dialect: DialectKind): RawBuilder<boolean> {
  const parts: RawBuilder<unknown>[] = [];
  if (filter.barcode !== undefined) parts.push(sql`product.barcode = ${filter.barcode}`);
  const text = filter.search;
  if (text !== undefined) {
    if (filter.barcode !== undefined) {
      // One row at most: a plain check beats any index.
      parts.push(dialect === 'sqlite' ? sql`instr(product.name_folded, ${text}) > 0` : sql`strpos(product.name_folded, ${text}) > 0`);
    } else if (dialect === 'sqlite') {
      parts.push(
        [...text].length >= TRIGRAM_LENGTH
          ? sql`product.pk IN (SELECT rowid FROM product_search WHERE product_search MATCH ${`"${text.replaceAll('"', '""')}"`})`
          : sql`instr(product.name_folded, ${text}) > 0`,
      );
    } else {
      parts.push(sql`product.name_folded LIKE ${`%${text.replace(/[\\%_]/g, '\\$&')}%`}`);
    }
  }
  return parts.length === 0 ? sql<boolean>`1 = 1` : sql<boolean>`${sql.join(parts, sql` AND `)}`;
}
