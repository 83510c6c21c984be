import type { Kysely, Migration, ColumnDefinitionBuilder, Selectable } from 'kysely';
import type { NewProduct } from '../catalogue/product.js';
import type { Database, DialectKind, ProductTable } from './schema.js';
import type { PoolStats } from './store.js';

/**
 * One database as the store sees it, the same shape for every database (as Kysely's
 * `src/dialect/<name>/` folders each make one dialect): its connection, how its errors read, the SQL
 * its migrations write in its own words, and its optional fast paths. Everything else the store
 * does is written once over `db`.
 */
export interface StoreDialect {
  /** Which database it is, for the few statements of the search written per database. */
  readonly kind: DialectKind;
  readonly db: Kysely<Database>;
  readonly errors: DialectErrors;
  readonly migrations: DialectMigrations;
  /** Statements run outside Kysely where they beat it; without them the shared queries run. */
  readonly fastPaths?: DialectFastPaths;
  /** Tells of changes other connections commit; without it every `cacheGeneration()` reads the revision. */
  readonly changes?: ChangeSignal;
  /** The connection pool's state, where there is a pool. */
  poolStats?(): PoolStats;
  /** Releases every connection (and the change signal's). */
  close(): Promise<void>;
}

/** How a database's errors read. */
export interface DialectErrors {
  isUniqueViolation(error: unknown): boolean;
  isConnectionFailure(error: unknown): boolean;
}

/**
 * What the schema's history (storage/migrations.ts) writes differently per database. The steps
 * named here run at the place of the same name there, and must keep writing exactly what they
 * wrote: databases already migrated do not run them again.
 */
export interface DialectMigrations {
  /** 0001, 0003: the type of a product's `pk` and of the columns that refer to it. */
  readonly pkType: 'integer' | 'bigint';
  /** 0001: makes `pk` the primary key, drawn so that a pk is never reused. */
  primaryKey(column: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /** 0002: the triggers keeping `catalogue_state`'s rows. */
  readonly catalogueState: Migration;
  /** 0004: the notice of committed changes to the products, where the database needs one. */
  readonly changeNotice: Migration;
  /** 0005: the trigram index over `name_folded`, and the trigger clearing the copy of a renamed name. */
  readonly search: Migration;
  /** The schema holding Kysely's bookkeeping tables, or `undefined` where the database has one. */
  migrationTableSchema(db: Kysely<unknown>): Promise<string | undefined>;
}

/**
 * A dialect's way to learn, without a query per request where it can, that another connection
 * committed a change to the products (PostgreSQL: LISTEN; SQLite: `PRAGMA data_version`).
 */
export interface ChangeSignal {
  /**
   * A number that differs from the one before whenever another connection committed a change since;
   * `undefined` while the dialect cannot tell (then the store reads the revision).
   */
  current(): number | undefined;
}

/**
 * A dialect's own ways to run the hottest statements, where they beat going through Kysely (SQLite:
 * group commit, and reads straight from prepared statements; PostgreSQL: grouped inserts). Each must
 * behave exactly as the shared query it replaces; inserts must settle only once the row is durable
 * and reject with the driver's error or DuplicateBarcodeError.
 */
export interface DialectFastPaths {
  readonly insertProduct?: (product: NewProduct) => Promise<ProductRow>;
  readonly findProduct?: (pk: number) => ProductRow | undefined;
  readonly readState?: () => StateRow | undefined;
}

/** A product as the store reads it. */
export type ProductRow = Pick<Selectable<ProductTable>, 'pk' | 'name' | 'barcode' | 'price_cents'>;

/** The sums of `catalogue_state`: the count and the revision. */
export interface StateRow {
  product_count: number | string | bigint | null;
  revision: number | string | bigint | null;
}
