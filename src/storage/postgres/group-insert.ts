import { sql, type Kysely } from 'kysely';
import { DuplicateBarcodeError, RestoreRunningError } from '../../catalogue/errors.js';
import type { NewProduct } from '../../catalogue/product.js';
import { RESTORE_UNDER_WAY } from '../bulk-write-journal.js';
import { newProductRow, PRODUCT_SELECT, type ProductRow } from '../product-row.js';
import type { Database } from '../schema.js';

interface Waiting {
  readonly product: NewProduct;
  resolve(row: ProductRow): void;
  reject(error: unknown): void;
}

/**
 * Inserts products in groups: every create asked for while the previous group was on its way goes
 * into one statement, so a group costs one round trip and one commit (the statement commits on its
 * own). Each caller's promise settles only once that commit is acknowledged, so a 201 is never sent
 * for a product that is not durable.
 *
 * pks come out as on SQLite: products are inserted in arrival order, and a barcode already stored,
 * or repeated earlier in the same group, draws no pk (it is filtered out before the insert draws from
 * the identity). `ON CONFLICT DO NOTHING` settles only a race with another connection's commit.
 */
export class PostgresGroupInsert {
  readonly #db: Kysely<Database>;
  #waiting: Waiting[] = [];
  #inFlight = false;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /**
   * Inserts one product with the next group.
   * @returns the stored row, once committed.
   * @throws DuplicateBarcodeError when the barcode is taken (by a stored product or an earlier member
   *   of the group); the driver's error when the group's statement failed (nothing of it is stored).
   */
  insert(product: NewProduct): Promise<ProductRow> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ product, resolve, reject });
      // After the I/O phase, so that every request already readable joins this group; while a group is
      // on its way, the next one gathers until it returns.
      if (this.#waiting.length === 1 && !this.#inFlight) setImmediate(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    const group = this.#waiting;
    this.#waiting = [];
    this.#inFlight = true;
    try {
      const input = group.map((waiting) => newProductRow(waiting.product));
      // Whether a restore is under way is read in the insert's own snapshot, and said by a row of its
      // own: a restore started after that snapshot treats this group as made before it.
      const { rows: answer } = await sql<Partial<ProductRow> & { restoring: boolean }>`
        WITH restoring AS (SELECT ${sql.raw(RESTORE_UNDER_WAY)} AS restoring),
        input AS (
          SELECT name, name_folded, barcode, price_cents, ord
          FROM unnest(${input.map((row) => row.name)}::text[], ${input.map((row) => row.name_folded)}::text[],
                      ${input.map((row) => row.barcode)}::text[], ${input.map((row) => row.price_cents)}::bigint[])
               WITH ORDINALITY AS t(name, name_folded, barcode, price_cents, ord)
        ), fresh AS (
          SELECT DISTINCT ON (barcode) name, name_folded, barcode, price_cents, ord FROM input
          WHERE NOT EXISTS (SELECT 1 FROM product WHERE product.barcode = input.barcode)
          ORDER BY barcode, ord
        )
        , inserted AS (
          -- With its folded copy, so that the next search has no name to fold first.
          INSERT INTO product (name, name_folded, barcode, price_cents)
          SELECT name, name_folded, barcode, price_cents FROM fresh WHERE NOT (SELECT restoring FROM restoring) ORDER BY ord
          ON CONFLICT (barcode) DO NOTHING
          RETURNING ${PRODUCT_SELECT}
        )
        SELECT restoring.restoring, inserted.* FROM restoring LEFT JOIN inserted ON true`.execute(this.#db);
      if (answer[0]?.restoring === true) throw new RestoreRunningError();
      const rows = answer.filter((row): row is ProductRow & { restoring: boolean } => row.pk !== null && row.pk !== undefined);
      const stored = new Map(rows.map((row) => [row.barcode, row]));
      for (const waiting of group) {
        const row = stored.get(waiting.product.barcode);
        // The first member with a barcode gets the row; any later one with the same barcode is a duplicate.
        if (row !== undefined) {
          stored.delete(waiting.product.barcode);
          waiting.resolve(row);
        } else {
          waiting.reject(new DuplicateBarcodeError(waiting.product.barcode));
        }
      }
    } catch (error) {
      for (const waiting of group) waiting.reject(error);
    } finally {
      this.#inFlight = false;
      if (this.#waiting.length > 0) setImmediate(() => void this.#flush());
    }
  }
}
