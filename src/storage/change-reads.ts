import { sql, type RawBuilder } from 'kysely';
import { toProduct, type ProductRow } from './product-row.js';
import { MISSING_STATE, type StoreContext } from './store-context.js';
import type { Change, ChangePage } from './store.js';

/** The change feed's reads: the products changed after a version, in version order. */
export class ChangeReads {
  readonly #context: StoreContext;

  constructor(context: StoreContext) {
    this.#context = context;
  }

  /**
   * Each read is one statement, so that the changes and the catalogue's version come from one
   * snapshot. One row more than asked tells whether more follow. A product gone since (no row in
   * `product`) is a removal.
   */
  async readChanges(since: number, limit: number): Promise<ChangePage> {
    // The changes in the order of the version index, each row with the version beside it: no sort and
    // no copy of the page in the database, which a full sync of a million products would pay 100 times.
    const { rows } = await this.#context.run(() =>
      sql<ChangeRow>`
        SELECT (SELECT version FROM catalogue_state WHERE id = 0) AS head,
          catalogue_change.version, catalogue_change.pk, product.name, product.barcode, product.price_cents
        FROM ${changesAfter(since)}
        ORDER BY catalogue_change.version
        LIMIT ${limit + 1}`.execute(this.#context.db),
    );
    const first = rows[0];
    if (first === undefined) return this.#readWhenNoChanges(since, limit);
    if (first.head === null) throw new Error(MISSING_STATE);
    return { version: Number(first.head), changes: rows.slice(0, limit).map(toChange), more: rows.length > limit };
  }

  /**
   * The catalogue's version when the read above found no change (so no row carried the version): read
   * with a look for changes again, in one statement, because a change committed in between would
   * otherwise lie below the version answered and be skipped by a client that resumes from it. When
   * there is one now, the page is read again.
   */
  async #readWhenNoChanges(since: number, limit: number): Promise<ChangePage> {
    const { rows } = await this.#context.run(() =>
      sql<{ head: number | string | bigint; changed: number | boolean }>`
        SELECT version AS head, EXISTS (SELECT 1 FROM ${changesAfter(since)}) AS changed
        FROM catalogue_state WHERE id = 0`.execute(this.#context.db),
    );
    const row = rows[0];
    if (row === undefined) throw new Error(MISSING_STATE);
    if (Boolean(row.changed)) return this.readChanges(since, limit);
    return { version: Number(row.head), changes: [], more: false };
  }
}

/**
 * The changes after `since` with their products; a removal has none. A whole copy (`since` 0) has
 * nothing to remove, so removals are left out of it.
 */
function changesAfter(since: number): RawBuilder<unknown> {
  return sql`catalogue_change ${since === 0 ? sql`JOIN` : sql`LEFT JOIN`} product ON product.pk = catalogue_change.pk
        WHERE catalogue_change.version > ${since}`;
}

interface ChangeRow {
  head: number | string | bigint | null;
  version: number | string | bigint | null;
  pk: number | string | bigint | null;
  name: string | null;
  barcode: string | null;
  price_cents: number | string | bigint | null;
}

function toChange(row: ChangeRow): Change {
  const pk = Number(row.pk);
  // The row has the product's columns: no copy of it per change (a page holds up to 10,000).
  return { version: Number(row.version), pk, product: row.name === null ? undefined : toProduct(row as ProductRow) };
}
