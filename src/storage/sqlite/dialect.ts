import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database } from '../schema.js';
import type { ChangeSignal, DialectErrors, DialectFastPaths, ProductRow, StateRow, StoreDialect } from '../dialect.js';
import { openSqliteConnection, type SqliteConnection, type SqliteStatement } from './driver.js';
import { GroupInsert } from './group-insert.js';
import { sqliteMigrations } from './migrations.js';
import { sqliteSearch } from './search.js';
import { withStatementCache } from './statement-cache.js';

/** Every pragma the service relies on, in one place. */
const PRAGMAS = [
  // Readers never block the writer and vice versa; several processes may share the file.
  'journal_mode = WAL',
  // A 201 is sent only after the commit is on disk.
  'synchronous = FULL',
  // Wait for another process's write lock instead of failing at once.
  'busy_timeout = 5000',
  'foreign_keys = ON',
];

export interface SqliteOptions {
  /**
   * Whether the store runs its hottest statements straight on the connection (group-commit inserts,
   * reads from prepared statements) rather than through Kysely; on unless turned off, as the tests do
   * to keep the shared queries tested outside transactions too.
   */
  readonly fastPaths?: boolean;
}

/**
 * Opens (creating when missing, folder included) the SQLite database at `path`, or an in-memory one
 * for `:memory:`, with the service's pragmas applied, as the store's dialect. Kysely reuses prepared
 * statements on the one connection, and so do the fast paths.
 */
export function openSqlite(path: string, { fastPaths = true }: SqliteOptions = {}): StoreDialect {
  if (path !== ':memory:') {
    makeFolders(dirname(path));
    assertWritable(path);
  }
  const database = openSqliteConnection(path);
  for (const pragma of PRAGMAS) database.exec(`PRAGMA ${pragma}`);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
  return {
    db,
    errors: sqliteErrors,
    migrations: sqliteMigrations,
    search: sqliteSearch,
    changes: dataVersionSignal(database),
    ...(fastPaths ? { fastPaths: directStatements(database) } : {}),
    close: () => db.destroy(),
  };
}

/**
 * Changes when another connection (another process: an import) commits to the file; this
 * connection's own writes do not change it, and the store counts those itself. Cheaper than reading
 * the revision row: no table page is read.
 */
function dataVersionSignal(database: SqliteConnection): ChangeSignal {
  // Read as a row (no driver-specific plucking), so that every SQLite driver runs it alike.
  const dataVersion = database.prepare<[], { data_version: number }>('PRAGMA data_version');
  // Read once per turn of the event loop: the requests of one turn arrived together, so none of them
  // can have followed a commit that another read in the same turn did not see; under load a turn holds
  // many requests, and this read (SQLite checking the shared WAL index) was the largest cost of a hit.
  let seenVersion: number | undefined;
  const readVersionOncePerTurn = (): number => {
    setImmediate(() => (seenVersion = undefined));
    return dataVersion.get()!.data_version;
  };
  return { current: () => (seenVersion ??= readVersionOncePerTurn()) };
}

/** Group-commit inserts and reads straight from prepared statements, over the store's connection. */
function directStatements(database: SqliteConnection): DialectFastPaths {
  // Prepared on first use, once the migrations have created the tables.
  let prepared: { groupInsert: GroupInsert; find: SqliteStatement<[number], ProductRow>; state: SqliteStatement<[], StateRow> } | undefined;
  const statements = () =>
    (prepared ??= {
      groupInsert: new GroupInsert(database),
      find: database.prepare<[number], ProductRow>('SELECT pk, name, barcode, price_cents FROM product WHERE pk = ?'),
      // SQLite's triggers keep everything in slot 0 (one writer at a time), so one row is the sum.
      state: database.prepare<[], StateRow>('SELECT product_count, revision FROM catalogue_state WHERE id = 0'),
    });
  return {
    insertProduct: (product) => statements().groupInsert.insert(product),
    // While a Kysely transaction is open on this connection, a direct read would see its uncommitted
    // rows; the store then takes Kysely's path, which waits for the transaction to end.
    get findProduct() {
      return database.inTransaction ? undefined : (pk: number) => statements().find.get(pk);
    },
    get readState() {
      return database.inTransaction ? undefined : () => statements().state.get();
    },
  };
}

/**
 * Creates the missing folders of `folder` one at a time. Node's recursive mkdir never returns for
 * some paths that cannot be created (under /proc it spins for ever); one step at a time fails at once.
 */
function makeFolders(folder: string): void {
  const missing: string[] = [];
  for (let current = resolve(folder); !existsSync(current); current = dirname(current)) {
    missing.unshift(current);
    if (dirname(current) === current) break;
  }
  for (const each of missing) mkdirSync(each);
}

/**
 * SQLite opens a file it may only read without a word and fails each write later; the service would
 * then start, pass its readiness check and answer every create with a 500.
 */
function assertWritable(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    try {
      accessSync(file, constants.R_OK | constants.W_OK);
    } catch {
      throw new Error(file === path ? 'the file is read-only for this user; the service writes to it.' : `${file} is read-only for this user; the service writes to it.`);
    }
  }
}

export const sqliteErrors: DialectErrors = {
  // better-sqlite3 names the extended result code; node:sqlite gives its number.
  isUniqueViolation: (error) => field(error, 'code') === 'SQLITE_CONSTRAINT_UNIQUE' || field(error, 'errcode') === SQLITE_CONSTRAINT_UNIQUE,
  // An embedded database is never "unreachable"; a busy or broken file is a real error.
  isConnectionFailure: () => false,
};

/** SQLite's extended result code for a UNIQUE constraint failure. */
const SQLITE_CONSTRAINT_UNIQUE = 2067;

function field(error: unknown, name: string): unknown {
  return typeof error === 'object' && error !== null && name in error ? (error as Record<string, unknown>)[name] : undefined;
}
