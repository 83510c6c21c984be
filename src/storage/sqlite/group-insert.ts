import type { SqliteConnection, SqliteStatement } from './driver.js';
import type { NewProduct } from '../../catalogue/product.js';
import type { ProductTable } from '../schema.js';
import { foldForSearch } from '../../catalogue/search.js';

/**
 * How often a group waits to see whether a transaction on its connection has ended. Such transactions
 * (an import's batch, a keyed create) end in milliseconds, and the poll runs only while one is open;
 * 1 ms is the shortest timer Node has, so creates wait no longer than needed.
 */
const TRANSACTION_POLL_MS = 1;

export type InsertedRow = Pick<ProductTable, 'name' | 'barcode' | 'price_cents'> & { pk: number };

interface Waiting {
  readonly product: NewProduct;
  resolve(row: InsertedRow): void;
  reject(error: unknown): void;
}

/**
 * Inserts products in group commits: every insert asked for while the event loop was busy (typically
 * during the previous commit's fsync) goes into one transaction, committed once with
 * `synchronous = FULL`. Each caller's promise settles only after that commit, so a 201 is never sent
 * for a product that is not durable.
 *
 * A unique violation fails only its own insert: SQLite's default ABORT resolution undoes the failing
 * statement (its trigger included) and keeps the transaction and the group's other rows. Any error that
 * ends the transaction itself fails every member of the group, since none of them is committed.
 */
export class GroupInsert {
  readonly #database: SqliteConnection;
  readonly #insert: SqliteStatement<[string, string, string, number], InsertedRow>;
  readonly #begin: SqliteStatement;
  readonly #commit: SqliteStatement;
  readonly #rollback: SqliteStatement;
  #waiting: Waiting[] = [];
  #scheduled = false;

  constructor(database: SqliteConnection) {
    this.#database = database;
    this.#insert = database.prepare<[string, string, string, number], InsertedRow>('INSERT INTO product (name, name_folded, barcode, price_cents) VALUES (?, ?, ?, ?) RETURNING pk, name, barcode, price_cents');
    // IMMEDIATE takes the write lock at once, so waiting for another process happens before any insert.
    this.#begin = database.prepare('BEGIN IMMEDIATE');
    this.#commit = database.prepare('COMMIT');
    this.#rollback = database.prepare('ROLLBACK');
  }

  /**
   * Inserts one product with the next group commit.
   * @returns the stored row, once its transaction is committed.
   * @throws the driver's error for this product (e.g. SQLITE_CONSTRAINT_UNIQUE), or the group's.
   */
  insert(product: NewProduct): Promise<InsertedRow> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ product, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the I/O phase, so that every request already readable joins this group.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    // A Kysely transaction on this same connection (an import, a keyed create) is open across I/O:
    // beginning here would fail, and rolling back would undo that transaction. Wait until it ends.
    if (this.#database.inTransaction) {
      setTimeout(() => this.#flush(), TRANSACTION_POLL_MS);
      return;
    }
    this.#scheduled = false;
    const group = this.#waiting;
    this.#waiting = [];
    const outcomes: Array<{ row: InsertedRow } | { error: unknown }> = [];
    try {
      this.#begin.run();
      for (const { product } of group) {
        try {
          outcomes.push({ row: this.#insert.get(product.name, foldForSearch(product.name), product.barcode, product.priceCents)! });
        } catch (error) {
          if (!this.#database.inTransaction) throw error;
          outcomes.push({ error });
        }
      }
      this.#commit.run();
    } catch (error) {
      if (this.#database.inTransaction) this.#rollback.run();
      for (const waiting of group) waiting.reject(error);
      return;
    }
    group.forEach((waiting, i) => {
      const outcome = outcomes[i]!;
      if ('row' in outcome) waiting.resolve(outcome.row);
      else waiting.reject(outcome.error);
    });
  }
}
