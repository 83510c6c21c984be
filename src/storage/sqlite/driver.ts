import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/** The result of a statement that returns no rows. */
export interface RunResult {
  readonly changes: number | bigint;
  readonly lastInsertRowid: number | bigint;
}

/**
 * A prepared statement, as both drivers offer it. Parameters go one by one or as one array (as
 * Kysely passes them), as better-sqlite3 takes them.
 */
export interface SqliteStatement<Params extends unknown[] = unknown[], Row = unknown> {
  /** Whether the statement returns rows (a SELECT, or a write with RETURNING). */
  readonly reader: boolean;
  /** Whether an iteration over its rows is still open, so that it cannot be run again yet. */
  readonly busy: boolean;
  get(...params: Params): Row | undefined;
  all(...params: Params): Row[];
  run(...params: Params): RunResult;
  iterate(...params: Params): IterableIterator<Row>;
}

/** One connection to an SQLite database: all the service asks of a driver. */
export interface SqliteConnection {
  prepare<Params extends unknown[] = unknown[], Row = unknown>(sql: string): SqliteStatement<Params, Row>;
  /** Runs SQL text of one or more statements, discarding any rows. */
  exec(sql: string): void;
  /** Whether a transaction is open on this connection. */
  readonly inTransaction: boolean;
  close(): void;
}

/** Which library drives SQLite in this process: Node's own where it has one, better-sqlite3 on Node 20. */
export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

const require = createRequire(import.meta.url);

/** The part of `node:sqlite` used here; @types/node for Node 20 does not describe that module. */
interface NodeSqliteModule {
  DatabaseSync: new (path: string) => NodeDatabaseSync;
  StatementSync: { prototype: object };
}
interface NodeDatabaseSync {
  prepare(sql: string): NodeStatementSync;
  exec(sql: string): void;
  readonly isTransaction: boolean;
  close(): void;
}
interface NodeStatementSync {
  columns(): unknown[];
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): RunResult;
  iterate(...params: unknown[]): IterableIterator<unknown>;
  setReadBigInts(enabled: boolean): void;
}

/**
 * `node:sqlite` when this Node has it unflagged with everything the service needs (Node 22.16 and
 * later: `StatementSync.columns` and `DatabaseSync.isTransaction`), else undefined. Node 24 aborts
 * in better-sqlite3 12, and Node 22 would need it compiled against its own headers; Node's own module
 * needs no native build at all.
 */
function loadNodeSqlite(): NodeSqliteModule | undefined {
  let module: NodeSqliteModule;
  try {
    module = require('node:sqlite') as NodeSqliteModule;
  } catch {
    return undefined;
  }
  // `isTransaction` is set on each connection rather than on the prototype, so a throwaway one is asked.
  const probe = new module.DatabaseSync(':memory:');
  try {
    return 'columns' in module.StatementSync.prototype && typeof probe.isTransaction === 'boolean' ? module : undefined;
  } finally {
    probe.close();
  }
}

let chosen: { name: SqliteDriverName; open(path: string): SqliteConnection } | undefined;

function driver(): NonNullable<typeof chosen> {
  if (chosen !== undefined) return chosen;
  const nodeSqlite = loadNodeSqlite();
  if (nodeSqlite !== undefined) {
    chosen = { name: 'node:sqlite', open: (path) => new NodeSqliteConnection(new nodeSqlite.DatabaseSync(path)) };
  } else {
    // Loaded only here: on Node 22 and 24 it may be absent (an optional dependency that did not build).
    const Database = loadBetterSqlite3();
    // Its database and statements already have exactly this shape: no wrapper on the Node 20 path.
    chosen = { name: 'better-sqlite3', open: (path) => new Database(path) as unknown as SqliteConnection };
  }
  return chosen;
}

function loadBetterSqlite3(): typeof BetterSqlite3 {
  try {
    return require('better-sqlite3') as typeof BetterSqlite3;
  } catch (error) {
    throw new Error(
      // The first line only: Node's "Cannot find module" goes on with its require stack.
      `SQLite needs Node 22.16 or later (node:sqlite), or better-sqlite3 installed and built for this Node: ${String(error instanceof Error ? error.message : error).split('\n')[0]}`,
      { cause: error },
    );
  }
}

/** The driver this process uses, chosen once, on first use. */
export function sqliteDriverName(): SqliteDriverName {
  return driver().name;
}

/**
 * Opens the SQLite database file at `path` (created when missing; its folder must exist), or an
 * in-memory one for `:memory:`, with the driver this Node runs best.
 *
 * @throws the driver's error when the file cannot be opened.
 */
export function openSqliteConnection(path: string): SqliteConnection {
  return driver().open(path);
}

class NodeSqliteConnection implements SqliteConnection {
  readonly #database: NodeDatabaseSync;

  constructor(database: NodeDatabaseSync) {
    this.#database = database;
  }

  prepare<Params extends unknown[], Row>(sql: string): SqliteStatement<Params, Row> {
    return new NodeSqliteStatement<Params, Row>(this.#database.prepare(sql));
  }

  exec(sql: string): void {
    this.#database.exec(sql);
  }

  get inTransaction(): boolean {
    return this.#database.isTransaction;
  }

  close(): void {
    this.#database.close();
  }
}

class NodeSqliteStatement<Params extends unknown[], Row> implements SqliteStatement<Params, Row> {
  readonly reader: boolean;
  readonly #statement: NodeStatementSync;
  #iterating = 0;

  constructor(statement: NodeStatementSync) {
    this.#statement = statement;
    this.reader = statement.columns().length > 0;
  }

  get busy(): boolean {
    return this.#iterating > 0;
  }

  get(...params: Params): Row | undefined {
    return this.#statement.get(...spread(params)) as Row | undefined;
  }

  all(...params: Params): Row[] {
    return this.#statement.all(...spread(params)) as Row[];
  }

  run(...params: Params): RunResult {
    // The connection's last rowid can be past 2^53 - 1 (a row the pk bound's trigger refused still leaves
    // its rowid there), which newer Nodes refuse to give as a number after the statement has run: a
    // COMMIT would throw having committed. As BigInts, it is given as it is.
    this.#statement.setReadBigInts(true);
    try {
      return this.#statement.run(...spread(params));
    } finally {
      this.#statement.setReadBigInts(false);
    }
  }

  *iterate(...params: Params): IterableIterator<Row> {
    // Running the statement again would reset this iteration; the statement cache asks `busy` first.
    this.#iterating += 1;
    try {
      yield* this.#statement.iterate(...spread(params)) as IterableIterator<Row>;
    } finally {
      this.#iterating -= 1;
    }
  }
}

/** node:sqlite would take one array as named parameters; no SQLite value is an array. */
function spread(params: readonly unknown[]): readonly unknown[] {
  return params.length === 1 && Array.isArray(params[0]) ? params[0] : params;
}
