import type { SqliteConnection, SqliteStatement } from './driver.js';
import { RestoreRunningError } from '../../catalogue/errors.js';
import type { NewProduct } from '../../catalogue/product.js';
import { RESTORE_UNDER_WAY } from '../bulk-write-journal.js';
import { NEW_PRODUCT_COLUMNS, newProductRow, PRODUCT_COLUMNS, type ProductRow } from '../product-row.js';
import { retryDelay, type SqliteWriteLock } from './write-lock.js';

/**
 * How often a group waits to see whether a transaction on its connection has ended. Such transactions
 * (an import's batch, a keyed create) end in milliseconds, and the poll runs only while one is open;
 * 1 ms is the shortest timer Node has, so creates wait no longer than needed.
 */
const TRANSACTION_POLL_MS = 1;

interface Waiting {
  readonly product: NewProduct;
  /** When it was asked for (`performance.now()`): it waits for the lock at most the lock's `waitMs` from then. */
  readonly since: number;
  resolve(row: ProductRow): void;
  reject(error: unknown): void;
}

/**
 * Inserts products in group commits: every insert asked for while the event loop was busy (typically
 * during the previous commit's fsync) goes into one transaction, committed once with
 * `synchronous = FULL`. Each caller's promise settles only after that commit, so a 201 is never sent
 * for a product that is not durable.
 *
 * While another process holds the file's write lock, the group waits on timers (the event loop goes on
 * serving) and keeps gathering; a member that has waited as long as a write may is refused with
 * StoreBusyError, nothing of it stored.
 *
 * A unique violation fails only its own insert: SQLite's default ABORT resolution undoes the failing
 * statement (its trigger included) and keeps the transaction and the group's other rows. Any error that
 * ends the transaction itself fails every member of the group, since none of them is committed.
 */
export class GroupInsert {
  readonly #database: SqliteConnection;
  readonly #insert: SqliteStatement<[string, string, string, number], ProductRow>;
  readonly #lock: SqliteWriteLock;
  readonly #restoring: SqliteStatement<[], { restoring: number }>;
  readonly #commit: SqliteStatement;
  readonly #rollback: SqliteStatement;
  #waiting: Waiting[] = [];
  #scheduled = false;
  /** Tries for the lock that found it taken since the last group was written. */
  #failedTries = 0;

  constructor(database: SqliteConnection, lock: SqliteWriteLock) {
    this.#database = database;
    this.#lock = lock;
    this.#insert = database.prepare<[string, string, string, number], ProductRow>(
      `INSERT INTO product (${NEW_PRODUCT_COLUMNS.join(', ')}) VALUES (?, ?, ?, ?) RETURNING ${PRODUCT_COLUMNS.join(', ')}`,
    );
    this.#restoring = database.prepare<[], { restoring: number }>(`SELECT ${RESTORE_UNDER_WAY} AS restoring`);
    this.#commit = database.prepare('COMMIT');
    this.#rollback = database.prepare('ROLLBACK');
  }

  /**
   * Inserts one product with the next group commit.
   * @returns the stored row, once its transaction is committed.
   * @throws the driver's error for this product (e.g. SQLITE_CONSTRAINT_UNIQUE), or the group's.
   */
  insert(product: NewProduct): Promise<ProductRow> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ product, since: performance.now(), resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the I/O phase, so that every request already readable joins this group.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    // A Kysely transaction on this same connection (a keyed create, names being folded) is open across
    // I/O: beginning here would fail, and rolling back would undo that transaction. Wait until it ends.
    if (this.#database.inTransaction) {
      setTimeout(() => this.#flush(), TRANSACTION_POLL_MS);
      return;
    }
    let began: boolean;
    try {
      // IMMEDIATE takes the write lock at once, so no insert runs before it is held.
      began = this.#lock.tryBegin();
    } catch (error) {
      this.#scheduled = false;
      for (const waiting of this.#takeGroup()) waiting.reject(error);
      return;
    }
    if (!began) {
      this.#waitForLock();
      return;
    }
    this.#scheduled = false;
    const group = this.#takeGroup();
    const outcomes: Array<{ row: ProductRow } | { error: unknown }> = [];
    try {
      // Read under the write lock: a restore cannot begin before this group commits.
      if (this.#restoring.get()!.restoring !== 0) throw new RestoreRunningError();
      for (const { product } of group) {
        try {
          const row = newProductRow(product);
          outcomes.push({ row: this.#insert.get(row.name, row.name_folded, row.barcode, row.price_cents)! });
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

  /** The members waiting now, counted as having waited for the lock if a try found it taken. */
  #takeGroup(): Waiting[] {
    const group = this.#waiting;
    this.#waiting = [];
    if (this.#failedTries > 0) {
      const now = performance.now();
      for (const waiting of group) this.#lock.waited(now - waiting.since);
      this.#failedTries = 0;
    }
    return group;
  }

  /** Refuses the members that have waited as long as they may, and tries again later for the others. */
  #waitForLock(): void {
    const now = performance.now();
    this.#waiting = this.#waiting.filter((waiting) => {
      const waited = now - waiting.since;
      if (waited < this.#lock.waitMs) return true;
      waiting.reject(this.#lock.gaveUp(waited));
      return false;
    });
    if (this.#waiting.length === 0) {
      this.#scheduled = false;
      this.#failedTries = 0;
      return;
    }
    setTimeout(() => this.#flush(), retryDelay(this.#failedTries));
    this.#failedTries += 1;
  }
}
