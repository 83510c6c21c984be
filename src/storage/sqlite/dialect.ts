import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import type { ChangeSignal, DialectErrors, DialectFastPaths, StateRow, StoreDialect } from '../dialect.js';
import { STATE_ROW } from '../catalogue-state.js';
import { PRODUCT_COLUMNS, type ProductRow } from '../product-row.js';
import { openSqliteConnection, type SqliteConnection, type SqliteStatement } from './driver.js';
import { GroupInsert } from './group-insert.js';
import { PK_BOUND_MESSAGE, sqliteMigrations } from './migrations.js';
import { sqliteSearch } from './search.js';
import { withStatementCache } from './statement-cache.js';
import { LockWaitingSqliteDialect, SqliteWriteLock } from './write-lock.js';

/** Every pragma the service relies on, in one place. */
const PRAGMAS = [
  // Readers never block the writer and vice versa; several processes may share the file.
  'journal_mode = WAL',
  // A 201 is sent only after the commit is on disk.
  'synchronous = FULL',
  // Never wait for another process's lock inside SQLite: its busy handler sleeps in the calling thread,
  // which is the event loop. Writes wait on timers instead (write-lock.ts).
  'busy_timeout = 0',
  'foreign_keys = ON',
];

/** How long a write waits for another process's write lock, unless told. */
const DEFAULT_WRITE_WAIT_MS = 3_000;

export interface SqliteOptions {
  /**
   * Whether the store runs its hottest statements straight on the connection (group-commit inserts,
   * reads from prepared statements) rather than through Kysely; on unless turned off, as the tests do
   * to keep the shared queries tested outside transactions too.
   */
  readonly fastPaths?: boolean;
  /** How long a write may wait for another process's write lock before it gives up, in milliseconds. */
  readonly writeWaitMs?: number;
}

/**
 * Opens (creating when missing, folder included) the SQLite database at `path`, or an in-memory one
 * for `:memory:`, with the service's pragmas applied, as the store's dialect: one connection reads,
 * another writes (one for both in memory, where no other process can hold the lock). Kysely reuses
 * prepared statements on each connection, and so do the fast paths.
 */
export function openSqlite(path: string, { fastPaths = true, writeWaitMs = DEFAULT_WRITE_WAIT_MS }: SqliteOptions = {}): StoreDialect {
  if (path !== ':memory:') {
    makeFolders(dirname(path));
    assertWritable(path);
  }
  const reader = openConnection(path);
  // A `:memory:` database exists only on the connection that made it.
  const writer = path === ':memory:' ? reader : openConnection(path);
  const lock = new SqliteWriteLock(writer, writeWaitMs, sqliteErrors.isBusy);
  const writeDb = new Kysely<Database>({ dialect: new LockWaitingSqliteDialect({ database: withStatementCache(writer) }, writer, lock) });
  const db = writer === reader ? writeDb : new Kysely<Database>({ dialect: new LockWaitingSqliteDialect({ database: withStatementCache(reader) }, reader, lock) });
  return {
    db,
    writeDb,
    errors: sqliteErrors,
    migrations: sqliteMigrations,
    search: sqliteSearch,
    givenPk: sql``,
    // AUTOINCREMENT draws one more than the larger of its row in sqlite_sequence and the largest pk.
    reservePks: async (db, highest) => {
      await sql`INSERT INTO sqlite_sequence (name, seq) SELECT 'product', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'product')`.execute(db);
      await sql`UPDATE sqlite_sequence SET seq = max(seq, ${highest}) WHERE name = 'product'`.execute(db);
    },
    jsonString: (text) => sql<string>`json_quote(${text})`,
    joinInOrder: (text) => sql<string>`group_concat(${text}, ',')`,
    textAsBytes: (text) => sql<Uint8Array>`CAST(${text} AS BLOB)`,
    // The writing connection's: the store counts its own writes, and the reading connection's would
    // count each of them a second time, as another connection's.
    changes: dataVersionSignal(writer),
    ...(fastPaths ? { fastPaths: directStatements(reader, writer, lock) } : {}),
    writeWaits: () => lock.stats(),
    close: async () => {
      await db.destroy();
      if (writeDb !== db) await writeDb.destroy();
    },
  };
}

function openConnection(path: string): SqliteConnection {
  const connection = openSqliteConnection(path);
  for (const pragma of PRAGMAS) connection.exec(`PRAGMA ${pragma}`);
  return connection;
}

/**
 * Changes when another connection (another process: an import) commits to the file; this
 * connection's own writes do not change it, and the store counts those itself. Cheaper than reading
 * the revision row: no table page is read. It cannot tell an addition from a change.
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

/** Group-commit inserts on the writing connection, and reads straight from prepared statements on the reading one. */
function directStatements(reader: SqliteConnection, writer: SqliteConnection, lock: SqliteWriteLock): DialectFastPaths {
  // Prepared on first use, once the migrations have created the tables.
  let prepared: { groupInsert: GroupInsert; find: SqliteStatement<[number], ProductRow>; state: SqliteStatement<[], StateRow> } | undefined;
  const statements = () =>
    (prepared ??= {
      groupInsert: new GroupInsert(writer, lock),
      find: reader.prepare<[number], ProductRow>(`SELECT ${PRODUCT_COLUMNS.join(', ')} FROM product WHERE pk = ?`),
      state: reader.prepare<[], StateRow>(STATE_ROW),
    });
  return {
    insertProduct: (product) => statements().groupInsert.insert(product),
    // While a transaction is open on the reading connection (in memory, where it is the writing one
    // too), a direct read would see its uncommitted rows; the store then takes Kysely's path, which
    // waits for the transaction to end.
    get findProduct() {
      return reader.inTransaction ? undefined : (pk: number) => statements().find.get(pk);
    },
    get readState() {
      return reader.inTransaction ? undefined : () => statements().state.get();
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
  // An embedded database is never "unreachable"; a broken file is a real error.
  isConnectionFailure: () => false,
  // SQLITE_BUSY and its extended codes (the primary code is the low byte).
  isBusy: (error) => String(field(error, 'code')).startsWith('SQLITE_BUSY') || (Number(field(error, 'errcode')) & 0xff) === SQLITE_BUSY,
  // SQLite statements have no time limit.
  isTimeout: () => false,
  isPkExhausted: (error) => error instanceof Error && error.message.includes(PK_BOUND_MESSAGE),
};

/** SQLite's result code for a database locked by another connection. */
const SQLITE_BUSY = 5;

/** SQLite's extended result code for a UNIQUE constraint failure. */
const SQLITE_CONSTRAINT_UNIQUE = 2067;

function field(error: unknown, name: string): unknown {
  return typeof error === 'object' && error !== null && name in error ? (error as Record<string, unknown>)[name] : undefined;
}
