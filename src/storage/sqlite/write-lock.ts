import { SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDialectConfig } from 'kysely';
import { StoreBusyError } from '../../catalogue/errors.js';
import type { WriteWaits } from '../dialect.js';
import type { SqliteConnection, SqliteStatement } from './driver.js';

/** What a try reports when it found the lock taken. */
export const TAKEN: unique symbol = Symbol('taken');

/** The longest pause between two tries for a lock: short against a write's typical hold of milliseconds. */
const MAX_RETRY_MS = 2;

/** Resolves after `ms` milliseconds, on a timer: the event loop serves everything else meanwhile. */
export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The pause before the next try after `failed` tries: 1 ms, then 2 ms, with up to 1 ms at random, so
 * that processes waiting for the same lock do not keep trying in step. Short, because the lock is mostly
 * held by another worker's group commit (about 1-2 ms): backing off to 16 ms left it free most of the
 * time and made creates with two workers wait 80 ms at p99. A try that finds it taken costs microseconds.
 */
export function retryDelay(failed: number): number {
  return Math.min(2 ** failed, MAX_RETRY_MS) + Math.random();
}

/**
 * Takes the database file's write lock for this process's writing connection without ever blocking the
 * event loop. The connection's busy timeout is 0, so a `BEGIN IMMEDIATE` that finds the lock taken by
 * another process (an import, plain SQL, another worker) fails at once; it is tried again on timers
 * until `waitMs` have passed. SQLite's own busy handler would instead sleep in the calling thread, and
 * with it every request of the process.
 */
export class SqliteWriteLock {
  readonly #database: SqliteConnection;
  readonly #begin: SqliteStatement;
  readonly #isBusy: (error: unknown) => boolean;
  /** How long a write may wait for the lock, in milliseconds. */
  readonly waitMs: number;
  #waits = 0;
  #seconds = 0;
  #timeouts = 0;

  constructor(database: SqliteConnection, waitMs: number, isBusy: (error: unknown) => boolean) {
    this.#database = database;
    this.#begin = database.prepare('BEGIN IMMEDIATE');
    this.waitMs = waitMs;
    this.#isBusy = isBusy;
  }

  /**
   * Begins an IMMEDIATE transaction if the lock is free.
   * @returns whether it began; `false` when another connection holds the lock.
   * @throws any error but the lock being taken.
   */
  tryBegin(): boolean {
    try {
      this.#begin.run();
      return true;
    } catch (error) {
      if (this.#isBusy(error) && !this.#database.inTransaction) return false;
      throw error;
    }
  }

  /**
   * Begins an IMMEDIATE transaction, waiting while another connection holds the lock.
   * @throws StoreBusyError when it is still taken after `waitMs`.
   */
  async begin(): Promise<void> {
    await this.untilFree(() => (this.tryBegin() ? true : TAKEN));
  }

  /**
   * Runs `attempt` again on timers for as long as it reports the lock taken (by returning `TAKEN`),
   * at most `waitMs` in all, and counts the wait when there was one.
   * @throws StoreBusyError when the lock is still taken after `waitMs`.
   */
  async untilFree<T>(attempt: () => T | typeof TAKEN | Promise<T | typeof TAKEN>): Promise<T> {
    const since = performance.now();
    for (let failed = 0; ; failed += 1) {
      const outcome = await attempt();
      const waited = performance.now() - since;
      if (outcome !== TAKEN) {
        if (failed > 0) this.waited(waited);
        return outcome;
      }
      if (waited >= this.waitMs) throw this.gaveUp(waited);
      await pause(retryDelay(failed));
    }
  }

  /** Whether `error` says the database is locked by another connection. */
  isBusyError(error: unknown): boolean {
    return this.#isBusy(error);
  }

  /** Counts a write that found the lock taken and got it after `ms` milliseconds. */
  waited(ms: number): void {
    this.#waits += 1;
    this.#seconds += ms / 1000;
  }

  /** Counts a write that gave up after `ms` milliseconds, and returns its error. */
  gaveUp(ms: number): StoreBusyError {
    this.#waits += 1;
    this.#seconds += ms / 1000;
    this.#timeouts += 1;
    return new StoreBusyError(ms);
  }

  stats(): WriteWaits {
    return { waits: this.#waits, seconds: this.#seconds, timeouts: this.#timeouts };
  }
}

/**
 * Kysely's SQLite dialect, except that transactions begin IMMEDIATE through `lock` (waiting on timers
 * for another process's write lock), and that a statement run outside a transaction that finds the
 * database locked (a read while another process recovers the file, say) is tried again on timers,
 * for as long as a write may wait.
 */
export class LockWaitingSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #lock: SqliteWriteLock;
  readonly #database: SqliteConnection;

  constructor(config: SqliteDialectConfig, database: SqliteConnection, lock: SqliteWriteLock) {
    super(config);
    this.#config = config;
    this.#database = database;
    this.#lock = lock;
  }

  override createDriver(): Driver {
    return new LockWaitingDriver(this.#config, this.#database, this.#lock);
  }
}

class LockWaitingDriver extends SqliteDriver {
  readonly #database: SqliteConnection;
  readonly #lock: SqliteWriteLock;

  constructor(config: SqliteDialectConfig, database: SqliteConnection, lock: SqliteWriteLock) {
    super(config);
    this.#database = database;
    this.#lock = lock;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    return {
      executeQuery: (query) => this.#retryingWhenBusy(() => connection.executeQuery(query)),
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    };
  }

  override async beginTransaction(): Promise<void> {
    await this.#lock.begin();
  }

  async #retryingWhenBusy<R>(run: () => Promise<R>): Promise<R> {
    return this.#lock.untilFree(async () => {
      try {
        return await run();
      } catch (error) {
        // Inside a transaction the lock is held: a busy error there is no wait to sit out.
        if (this.#lock.isBusyError(error) && !this.#database.inTransaction) return TAKEN;
        throw error;
      }
    });
  }
}
