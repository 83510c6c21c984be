import type { Kysely } from 'kysely';
import { PksExhaustedError, StoreBusyError, StoreTimeoutError, StoreUnavailableError } from '../catalogue/errors.js';
import type { GiveUp } from '../turns.js';
import type { StoreDialect } from './dialect.js';
import type { Database } from './schema.js';

/**
 * What every part of the store works with: the database, its dialect, and the one translation of its
 * errors into the store's own.
 */
export class StoreContext {
  readonly dialect: StoreDialect;
  /** For reads. */
  readonly db: Kysely<Database>;
  /** For writes, each in a transaction (see `StoreDialect.writeDb`). */
  readonly writeDb: Kysely<Database>;
  /**
   * Told after each transaction that changed products as part of a longer piece of work (an abandoned
   * bulk write's undo step): the store's own commits are not signalled to it, and its kept answers
   * must not outlive one of them until the whole work is done.
   */
  readonly changedProducts: () => void;

  constructor(dialect: StoreDialect, changedProducts: () => void = () => undefined) {
    this.dialect = dialect;
    this.db = dialect.db;
    this.writeDb = dialect.writeDb;
    this.changedProducts = changedProducts;
  }

  /** Runs `query`, turning the database's failures into the store's errors (see `translate`). */
  async run<T>(query: () => Promise<T>, what = 'a query'): Promise<T> {
    try {
      return await query();
    } catch (error) {
      throw this.translate(error, what);
    }
  }

  /**
   * The store's error for a driver's: StoreUnavailableError when the database cannot be reached,
   * StoreBusyError when a lock stayed taken too long, StoreTimeoutError (saying `what` timed out) when
   * a statement ran past its limit, PksExhaustedError when no pk is left; else the error itself.
   */
  translate(error: unknown, what = 'a query'): unknown {
    const { errors } = this.dialect;
    if (errors.isConnectionFailure(error)) return new StoreUnavailableError(error);
    if (errors.isBusy(error)) return new StoreBusyError(undefined, error);
    if (errors.isTimeout(error)) return new StoreTimeoutError(what, error);
    if (errors.isPkExhausted(error)) return new PksExhaustedError(error);
    return error;
  }

  /** Whether `error` is the database refusing a row for a unique index. */
  isUniqueViolation(error: unknown): boolean {
    return this.dialect.errors.isUniqueViolation(error);
  }
}

/** The catalogue_state rows are missing: the schema was not migrated. */
export const MISSING_STATE = 'The catalogue_state rows are missing; run the migrations.';

/**
 * When reads that take turns (`Turns`) give up waiting: once none has ended well for the dialect's
 * query time limit, with the StoreTimeoutError a read of `what` that ran into the limit would give.
 * Never where a query cannot hang.
 */
export function giveUpWaiting(dialect: StoreDialect, what: string): GiveUp | undefined {
  const afterMs = dialect.queryTimeLimitMs;
  return afterMs === undefined ? undefined : { afterMs, error: () => new StoreTimeoutError(what, undefined) };
}
