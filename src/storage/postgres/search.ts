import { sql } from 'kysely';
import type { DialectSearch } from '../dialect.js';

/** PostgreSQL's part of the product search: pg_trgm's index, which LIKE uses (migration 0005). */
export const postgresSearch: DialectSearch = {
  foldedRow: (pk, name, folded) => sql`(cast(${String(pk)} as bigint), cast(${name} as text), cast(${folded} as text))`,
  pkParameter: String,
  unfoldedHint: '',
  contains: (text) => sql<boolean>`strpos(product.name_folded, ${text}) > 0`,
  // PostgreSQL would otherwise walk the pk index, reading every row until enough match: a full
  // scan for a rare name or a barcode. Sorting the few matches the index finds is cheaper.
  pkOrder: sql<number>`product.pk + 0`,
  // A text too short for a trigram still uses LIKE, which then reads every folded name.
  textSource: (text, short, plain) => plain(sql<boolean>`product.name_folded LIKE ${`%${text.replace(/[\\%_]/g, '\\$&')}%`}`, short),
};
