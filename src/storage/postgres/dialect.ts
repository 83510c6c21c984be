import {
  Kysely,
  sql,
  type PostgresCursor,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
  type RawBuilder,
} from 'kysely';
import { Pool, type PoolClient } from 'pg';
import { errorCode } from '../../error-details.js';
import type { DialectErrors, StoreDialect } from '../dialect.js';
import type { Database } from '../schema.js';
import { PostgresChangeListener } from './change-listener.js';
import { copiedRow } from './copied-row.js';
import { PostgresGroupInsert } from './group-insert.js';
import { CurrentSchemaPostgresDialect } from './introspector.js';
import { postgresMigrations } from './migrations.js';
import { postgresSearch } from './search.js';

/** Opening a connection, or waiting for a free one when the pool is full, gives up after this. */
const CONNECTION_TIMEOUT_MS = 2_000;

/**
 * Time limits on each query, so that a request fails (and is answered 503) instead of holding its
 * caller and a pooled connection when the database does not answer.
 */
const QUERY_TIME_LIMITS = {
  /** Cancelled by the server: a slow statement frees its connection. */
  statement_timeout: 5_000,
  /** Given up by the client when no answer comes at all (a network that drops packets silently). */
  query_timeout: 6_000,
} as const;

/** How long a statement waits for a lock, unless told. */
const DEFAULT_WRITE_WAIT_MS = 3_000;

/** Idle connections are closed after this long, so a quiet instance holds few server slots. */
const IDLE_TIMEOUT_MS = 30_000;

export interface PostgresOptions {
  /** Most connections open at once. */
  readonly poolMax: number;
  /**
   * To serve: how long a statement may wait for a lock (the catalogue's write lock, a row another
   * writer holds) before it gives up, in milliseconds.
   */
  readonly writeWaitMs?: number;
  /**
   * To serve requests: each query bounded in time, creates grouped into one statement, and other
   * instances' changes heard by LISTEN. To migrate: none of these (a migration may outlast any time
   * limit).
   */
  readonly purpose: 'serve' | 'migrate';
}

/**
 * Connects to the PostgreSQL database at `url` through a pool of connections, as the store's
 * dialect. Nothing is opened until the first query; a lost connection is replaced on the next one.
 *
 * @example const dialect = openPostgres('postgres://catalogue@127.0.0.1:5432/catalogue', { poolMax: 10, purpose: 'serve' });
 */
export function openPostgres(url: string, { poolMax, purpose, writeWaitMs = DEFAULT_WRITE_WAIT_MS }: PostgresOptions): StoreDialect {
  const serve = purpose === 'serve';
  const pool = new Pool({
    connectionString: url,
    max: poolMax,
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    keepAlive: true,
    application_name: 'catalogue',
    // A lock wait must end before the statement's own limit does, so that it is told apart as a busy catalogue.
    ...(serve ? { ...QUERY_TIME_LIMITS, statement_timeout: Math.max(QUERY_TIME_LIMITS.statement_timeout, writeWaitMs + 2_000), lock_timeout: writeWaitMs } : {}),
  });
  // An idle connection that breaks (server restart, network cut) is dropped by the pool; without a
  // listener its error event would end the process. Requests in flight get their own error.
  pool.on('error', () => undefined);
  // pg-pool listens for a client's errors only while it is idle. A backend terminated while its client
  // is checked out (between two queries of a transaction, or in the same packet as the end of its
  // start-up, before anyone holds the client) emits 'error' with nobody else listening, which would
  // end the process. The next query on that client fails, and the request gets a 503.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool: discardingFailedClients(pool) }) });
  // The pk is an identity GENERATED ALWAYS: a row with its own pk must say so.
  const common = {
    db,
    writeDb: db,
    errors: postgresErrors,
    migrations: postgresMigrations,
    search: postgresSearch,
    givenPk: sql`OVERRIDING SYSTEM VALUE`,
    // Under the catalogue's write lock, which every insert takes before it draws a pk: no pk is drawn
    // between the read of the sequence and its move. Sequences are outside transactions: the move holds at once.
    reservePks: async (db: Kysely<Database>, highest: number) => {
      await sql`SELECT catalogue_write_lock()`.execute(db);
      const sequence = sql`pg_get_serial_sequence('product', 'pk')`;
      await sql`SELECT setval(${sequence}, greatest(${highest}::bigint, coalesce(pg_sequence_last_value(${sequence}), 0)))`.execute(db);
    },
    jsonString: (text: RawBuilder<unknown>) => sql<string>`to_json(${text})::text`,
    joinInOrder: (text: RawBuilder<unknown>, order: RawBuilder<unknown>) => sql<string>`string_agg(${text}, ',' ORDER BY ${order})`,
    textAsBytes: (text: RawBuilder<unknown>) => sql<string>`${text}`,
  };
  if (!serve) return { ...common, close: () => db.destroy() };
  const groups = new PostgresGroupInsert(db);
  const listener = new PostgresChangeListener(url);
  return {
    ...common,
    fastPaths: {
      insertProduct: (product) => groups.insert(product),
      readTextRow: (select) => copiedRow(pool, select, isConnectionFailure),
    },
    changes: listener,
    queryTimeLimitMs: QUERY_TIME_LIMITS.query_timeout,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: async () => {
      await listener.close();
      await db.destroy();
    },
  };
}

/**
 * The pool as Kysely uses it, except that a connection on which a query failed for want of the
 * database is closed instead of being pooled again. `pg` keeps a connection whose query timed out,
 * and a connection to a host that vanished (a fail-over, a dead network path) would then fail every
 * request that draws it, for as long as the operating system keeps the socket.
 */
function discardingFailedClients(pool: Pool): PostgresPool {
  return {
    connect: async () => new DiscardOnFailureClient(await pool.connect()),
    end: () => pool.end(),
  };
}

class DiscardOnFailureClient implements PostgresPoolClient {
  readonly #client: PoolClient;
  #failed = false;
  // A client whose connection broke while checked out is closed on release, not pooled again.
  readonly #onError = (): void => {
    this.#failed = true;
  };

  constructor(client: PoolClient) {
    this.#client = client;
    client.on('error', this.#onError);
  }

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sqlOrCursor: string | PostgresCursor<R>,
    parameters: ReadonlyArray<unknown> = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== 'string') throw new Error('Cursors are not configured for this pool.');
    // pg types `command` as any string; Kysely's narrower type is what the server sends for its queries.
    const result = this.#client.query(sqlOrCursor, [...parameters]) as unknown as Promise<PostgresQueryResult<R>>;
    return result.catch((error: unknown) => {
      if (isConnectionFailure(error)) this.#failed = true;
      throw error;
    });
  }

  release(): void {
    // pg-pool closes a client released with an error (a hung one by destroying its socket).
    this.#client.off('error', this.#onError);
    this.#client.release(this.#failed);
  }
}

/** SQLSTATE codes that mean "the database is not there right now", not "the request is wrong". */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database was dropped or renamed under the service
  '28000', // invalid_authorization_specification: the role may no longer log in
  '28P01', // invalid_password: its password was changed
]);

/** Socket errors on the way to the server. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Messages of `pg` and `pg-pool` errors that carry no code. */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
  /is not queryable$/,
  // 55000, a class that also holds statement errors: only this one is about connecting.
  /is not currently accepting connections$/,
  /^Client was closed and is not queryable$/,
];

export const postgresErrors: DialectErrors = {
  isUniqueViolation: (error) => errorCode(error) === '23505',
  isConnectionFailure,
  // lock_timeout fired.
  isBusy: (error) => errorCode(error) === '55P03',
  // statement_timeout fired (or an operator cancelled the statement).
  isTimeout: (error) => errorCode(error) === '57014',
  // sequence_generator_limit_exceeded: the identity reached its MAXVALUE (migration 0012).
  isPkExhausted: (error) => errorCode(error) === '2200H',
};

function isConnectionFailure(error: unknown): boolean {
  // Connecting to a host name that resolves to several addresses fails with one error per address.
  if (error instanceof AggregateError) return error.errors.some(isConnectionFailure);
  const code = errorCode(error);
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) {
    return true;
  }
  return error instanceof Error && DRIVER_MESSAGES.some((pattern) => pattern.test(error.message));
}
