import { sql } from 'kysely';
import type { DialectSearch } from '../dialect.js';

/** SQLite's part of the product search: FTS5's trigram index (migration 0005). */
export const sqliteSearch: DialectSearch = {
  foldedRow: (pk, name, folded) => sql`(${Number(pk)}, ${name}, ${folded})`,
  storedName: sql<Uint8Array>`CAST(product.name AS BLOB)`,
  // The list of pks lets SQLite find the rows by key instead of joining the whole table to the values.
  pkParameter: Number,
  // SQLite is told which index: statistics gathered while many names were unfolded would have it
  // scan the table long after they are folded.
  unfoldedHint: 'INDEXED BY product_unfolded ',
  contains: (text) => sql<boolean>`instr(product.name_folded, ${text}) > 0`,
  pkOrder: sql<number>`product.pk`,
  // A few milliseconds of reading each: another request waits about that long at most.
  pksPerPiece: 4_096,
  textSource(text, short, plain) {
    if (short) return plain(sqliteSearch.contains(text), true);
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
  },
};
