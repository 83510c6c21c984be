import type { ColumnDefinitionBuilder, Kysely, Migration, RawBuilder } from 'kysely';
import type { NewProduct } from '../catalogue/product.js';
import type { ProductRow } from './product-row.js';
import type { Database } from './schema.js';

/** Connections of a pool, by state. */
export interface PoolStats {
  readonly total: number;
  readonly idle: number;
  /** Queries waiting for a connection. */
  readonly waiting: number;
}

/**
 * One database as the store sees it, the same shape for every database (as Kysely's
 * `src/dialect/<name>/` folders each make one dialect): its connection, how its errors read, the SQL
 * its migrations write in its own words, and its optional fast paths. Everything else the store
 * does is written once over `db`.
 */
export interface StoreDialect {
  /** For reads. */
  readonly db: Kysely<Database>;
  /**
   * For every write, in a transaction: `db` itself on PostgreSQL; on SQLite a connection of its own,
   * so that a write waiting for another process's write lock (on timers, never blocking the event
   * loop) holds up only the writes behind it, and reads never see a write before its commit.
   */
  readonly writeDb: Kysely<Database>;
  readonly errors: DialectErrors;
  readonly migrations: DialectMigrations;
  readonly search: DialectSearch;
  /** What follows an INSERT's column list when its rows give their own `pk` (a removal undone, a restore). */
  readonly givenPk: RawBuilder<unknown>;
  /**
   * Makes the pks drawn from now on (by a create) greater than `highest`, and than any drawn before: a
   * restore writes products with their own pks up to `highest`, which no create may take meanwhile
   * (PostgreSQL: the identity's sequence; SQLite: AUTOINCREMENT's row in `sqlite_sequence`). Draws no
   * pk itself, so that pks come out the same on every database. Within a transaction of `writeDb`.
   */
  reservePks(db: Kysely<Database>, highest: number): Promise<void>;
  /** A text value written as a JSON string, quotes and escapes included (SQLite `json_quote`, PostgreSQL `to_json`). */
  jsonString(text: RawBuilder<unknown>): RawBuilder<string>;
  /**
   * The aggregate of the texts of a subquery ordered by `order`, joined by commas in that order.
   * SQLite appends rows in the order an ordered subquery hands them (it cannot flatten a subquery with
   * a LIMIT into an aggregate, so it runs it as a co-routine), and sorting them again would cost a
   * third of the read; PostgreSQL is told the order.
   */
  joinInOrder(text: RawBuilder<unknown>, order: RawBuilder<unknown>): RawBuilder<string>;
  /**
   * A text handed to the service as its UTF-8 bytes where the driver can do so without decoding it
   * (SQLite: as a BLOB, which saves decoding a long text into a string and encoding it again to send
   * it); PostgreSQL hands it over as text.
   */
  textAsBytes(text: RawBuilder<unknown>): RawBuilder<string | Uint8Array>;
  /** Statements run outside Kysely where they beat it; without them the shared queries run. */
  readonly fastPaths?: DialectFastPaths;
  /**
   * How long the driver waits for the answer to a query before it gives up, where a query can hang
   * (a database across a network that stopped answering); none where it cannot (SQLite, in the process).
   */
  readonly queryTimeLimitMs?: number;
  /** Tells of changes other connections commit; without it every `cacheGeneration()` reads the revision. */
  readonly changes?: ChangeSignal;
  /** The connection pool's state, where there is a pool. */
  poolStats?(): PoolStats;
  /** How writes have waited for another connection's write lock so far, where the dialect can tell. */
  writeWaits?(): WriteWaits;
  /** Releases every connection (and the change signal's). */
  close(): Promise<void>;
}

/** How a database's errors read. */
export interface DialectErrors {
  isUniqueViolation(error: unknown): boolean;
  isConnectionFailure(error: unknown): boolean;
  /** Another connection holds a lock the statement needs, and the statement gave up waiting for it. */
  isBusy(error: unknown): boolean;
  /** The statement ran past its time limit and was cancelled. */
  isTimeout(error: unknown): boolean;
  /** A new product would have drawn a pk above MAX_PK (migration 0012). */
  isPkExhausted(error: unknown): boolean;
}

/** Totals, since the store opened, of the waits of writes for another connection's write lock. */
export interface WriteWaits {
  /** Writes that found the lock taken and waited. */
  readonly waits: number;
  /** Seconds those writes waited, in all. */
  readonly seconds: number;
  /** Writes that gave up, having waited as long as they may. */
  readonly timeouts: number;
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
  /** 0006: refuses a `price_cents` above `MAX_PRICE_CENTS` on every insert and update. */
  readonly priceLimit: Migration;
  /**
   * 0007, after the shared steps have made `catalogue_change` and `catalogue_state.version`: the
   * triggers that replace 0002's, keeping the count and the revision and giving every change to a
   * product its version (in commit order, under the catalogue's write lock), and the idempotency
   * records' foreign key to `product` dropped.
   */
  readonly changeFeed: Migration;
  /** 0009: the trigram index rewritten only for a folded name that changed. */
  readonly searchIndexOnChange: Migration;
  /** 0010: the trigram index taking its trigrams across words, where 0005's took them word by word. */
  readonly searchAcrossWords: Migration;
  /** 0011: the notice of a new catalogue identity, where the database needs one (as 0004's for products). */
  readonly catalogueIdentity: Migration;
  /** Refuses a pk above MAX_PK (PostgreSQL: the identity's MAXVALUE; SQLite: a trigger). */
  readonly pkBound: Migration;
  /** 0015: refuses a pk outside 1..MAX_PK from any writer, plain SQL's explicit pks and UPDATEs of pk included. */
  readonly pkRange: Migration;
  /** 0013: the trigram index taking its trigrams across every character that is not a letter or a digit, where 0010's took them across spaces. */
  readonly searchAcrossSeparators: Migration;
  /**
   * 0016: the name as the trigram index reads it kept in a column of its own, indexed in place of 0013's
   * expression, so that checking a candidate the index hands over is no longer computing the expression.
   */
  readonly searchColumn: Migration;
  /** 0014: 0004's notice naming the kind of change (`INSERT`, `UPDATE`, ...), where the database needs one. */
  readonly changeNoticeKind: Migration;
  /**
   * 0017: a product that plain SQL moves to another pk (SQLite: `SET pk`, `rowid`, `_rowid_` or `oid`;
   * PostgreSQL: `SET pk = DEFAULT`) is a removal of its old pk and a change at its new one in the feed,
   * and a search finds it at its new pk.
   */
  readonly pkMoves: Migration;
  /** The schema holding Kysely's bookkeeping tables, or `undefined` where the database has one. */
  migrationTableSchema(db: Kysely<unknown>): Promise<string | undefined>;
}

/**
 * What the product search (storage/search-index.ts) writes differently per database: the trigram
 * index it reads (SQLite FTS5, PostgreSQL pg_trgm) and how values are typed.
 */
export interface DialectSearch {
  /** A row `(pk, name, folded)` of a VALUES list, typed alike on every row; `name` as `storedName` read it. */
  foldedRow(pk: number | string, name: string | Uint8Array, folded: string): RawBuilder<unknown>;
  /**
   * `product.name` exactly as stored, to fold it and to find it again unchanged: SQLite keeps what plain
   * SQL gives a text column (bytes that are no UTF-8, a BLOB, a number), which read as text would no
   * longer equal what is stored.
   */
  readonly storedName: RawBuilder<string | Uint8Array>;
  /** A pk as a parameter compared with `product.pk`. */
  pkParameter(pk: number | string): number | string;
  /** What follows `FROM product` in the read of the names without a folded copy. */
  readonly unfoldedHint: string;
  /** Whether `product.name_folded` holds `text`, read name by name. */
  contains(text: string): RawBuilder<boolean>;
  /** What to ORDER BY for `pk` order of the matches of a plain WHERE on `product`. */
  readonly pkOrder: RawBuilder<number>;
  /**
   * The matches of a search text; `short` when it has fewer characters than a trigram. `plain` makes
   * a source of a WHERE on `product` alone.
   */
  textSource(text: string, short: boolean, plain: (where: RawBuilder<boolean>, readsEveryName: boolean) => FilterSource): FilterSource;
  /**
   * When set, a search that reads every folded name reads them in ranges of this many pks, one
   * statement each, giving the event loop a turn between them; otherwise in one statement. SQLite
   * runs every statement on the service's one thread, where one statement over every name would
   * hold up every other request; PostgreSQL runs it on a connection of its own.
   */
  readonly pksPerPiece?: number;
  /**
   * Where set, a page of a text that can be walked (`FilterSource.walk`) and that at least `share` of a
   * sample of the names holds is read by walking the products in pk order, counting to the bound on
   * the way; other texts are counted through the trigram index. Without it, every text of a trigram
   * or more is counted through the index.
   */
  readonly denseTexts?: DenseTexts;
}

/** How a dialect tells a text many names hold from one few do, before reading its matches. */
export interface DenseTexts {
  /** The share of the sampled names, from 0 to 1, from which a text is walked. */
  readonly share: number;
  /** A statement reading the folded names (`name_folded`) of about `size` products at random out of `products`. */
  sample(size: number, products: number): RawBuilder<{ name_folded: string | null }>;
  /**
   * Runs a statement that reads (or counts) the matches of a text the sample says few names hold, so
   * that the database reads them through the trigram index whatever its own estimate of their number.
   */
  readThroughIndex<R>(db: Kysely<Database>, statement: RawBuilder<R>): Promise<R[]>;
}

/**
 * Where a filter's matches come from, as SQL over table `product` (every column of it is reachable).
 */
export interface FilterSource {
  /** The FROM clause. */
  readonly from: RawBuilder<unknown>;
  readonly where: RawBuilder<boolean>;
  /** The matches' `pk`, cheapest to compare (FTS5 hands out rowids in order). */
  readonly pk: RawBuilder<number>;
  /** What to ORDER BY for `pk` order. */
  readonly order: RawBuilder<number>;
  /** A cheaper FROM and WHERE that count the same matches. */
  readonly count: RawBuilder<unknown>;
  /** Whether every folded name is read: the text is too short for a trigram index. */
  readonly readsEveryName: boolean;
  /**
   * Where set, a page of matches that are many (dense in pk order) is read by walking `product` in pk
   * order and checking each row until the page is full, instead of reading and sorting every match; and
   * a batch of a long list is read in `walk.order`, which leaves the choice to the database's planner.
   */
  readonly walk?: { readonly where: RawBuilder<boolean>; readonly order: RawBuilder<number> };
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
  /**
   * Of the changes `current()` has counted, how many may have changed or removed a product that
   * existed (any change but one that only added products), read right after it. Without it every
   * change counts as such.
   */
  existingChanges?(): number;
  /**
   * True when another connection's commit may be counted only some time after that commit returned
   * (PostgreSQL: a notice over the network). Processes serving one port side by side then tell each
   * other of their own writes before answering them (`WriteNotices`).
   */
  readonly late?: boolean;
  /** Where the signal is a connection of its own (PostgreSQL's `LISTEN`): its state. */
  connection?(): ChangeConnection;
}

/** The state of the connection a change signal hears other connections' commits on. */
export interface ChangeConnection {
  /** Whether it listens now: while not, every cached read asks the database for its revision. */
  readonly listening: boolean;
  /** How often it was lost while listening (ended, or silent past its check) since the store opened. */
  readonly lost: number;
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
  /**
   * The row of a one-row SELECT whose columns are all text, given as SQL with its values written in:
   * each column's UTF-8 bytes (null for NULL), never decoded into a string; `undefined` for no row.
   * For large texts read often (a step of the whole list, a page of the change feed), which as strings
   * fill the heap (PostgreSQL: read by COPY, src/storage/postgres/copied-row.ts); used through
   * src/storage/text-row.ts.
   */
  readonly readTextRow?: (select: string) => Promise<Array<Uint8Array | null> | undefined>;
}

/** The row of `catalogue_state`: the count, the revision and the version. */
export interface StateRow {
  product_count: number | string | bigint | null;
  revision: number | string | bigint | null;
  version: number | string | bigint | null;
}
