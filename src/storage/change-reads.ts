import { sql } from 'kysely';
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
   * In one statement, so that the changes and the catalogue's version come from one snapshot. One row
   * more than asked tells whether more follow. A product gone since (no row in `product`) is a removal.
   */
  async readChanges(since: number, limit: number): Promise<ChangePage> {
    const { rows } = await this.#context.run(() =>
      sql<ChangeRow>`
        SELECT s.version AS head, c.version, c.pk, c.name, c.barcode, c.price_cents
        FROM catalogue_state s
        LEFT JOIN (
          SELECT catalogue_change.version, catalogue_change.pk, product.name, product.barcode, product.price_cents
          FROM catalogue_change LEFT JOIN product ON product.pk = catalogue_change.pk
          WHERE catalogue_change.version > ${since}${since === 0 ? sql` AND product.pk IS NOT NULL` : sql``}
          ORDER BY catalogue_change.version
          LIMIT ${limit + 1}
        ) c ON 1 = 1
        WHERE s.id = 0
        ORDER BY c.version`.execute(this.#context.db),
    );
    const first = rows[0];
    if (first === undefined) throw new Error(MISSING_STATE);
    const found = first.version === null ? [] : rows;
    const changes = found.slice(0, limit).map(toChange);
    return { version: Number(first.head), changes, more: found.length > limit };
  }
}

interface ChangeRow {
  head: number | string | bigint;
  version: number | string | bigint | null;
  pk: number | string | bigint | null;
  name: string | null;
  barcode: string | null;
  price_cents: number | string | bigint | null;
}

function toChange(row: ChangeRow): Change {
  const pk = Number(row.pk);
  return { version: Number(row.version), pk, product: row.name === null ? undefined : toProduct({ ...(row as ProductRow), pk }) };
}
