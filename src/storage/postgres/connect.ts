import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import type { DialectErrors } from '../kysely-store.js';
import type { Database } from '../schema.js';

/**
 * Time limits that keep a request from waiting on a database that does not answer. A request
 * fails (and is answered 503) instead of holding its caller and a pooled connection.
 */
const LIMITS = {
  /** Opening a connection, or waiting for a free one when the pool is full. */
  connectionTimeoutMillis: 2_000,
  /** Cancelled by the server: a slow statement frees its connection. */
  statement_timeout: 5_000,
  /** Given up by the client when no answer comes at all (a network that drops packets silently). */
  query_timeout: 6_000,
} as const;

/** Idle connections are closed after this long, so a quiet instance holds few server slots. */
const IDLE_TIMEOUT_MS = 30_000;

/**
 * Connects to the PostgreSQL database at `url` through a pool of at most `poolMax` connections.
 * Nothing is opened until the first query; a lost connection is replaced on the next one.
 *
 * @example const db = connectPostgres('postgres://catalogue@127.0.0.1:5432/catalogue', 10);
 */
export function connectPostgres(url: string, poolMax: number): Kysely<Database> {
  const pool = new Pool({
    connectionString: url,
    max: poolMax,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    keepAlive: true,
    application_name: 'catalogue',
    ...LIMITS,
  });
  // An idle connection that breaks (server restart, network cut) is dropped by the pool; without a
  // listener its error event would end the process. Requests in flight get their own error.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** SQLSTATE codes that mean "the database is not there right now", not "the request is wrong". */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '57014', // query_canceled: statement_timeout fired
  '53300', // too_many_connections
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
  /^Client was closed and is not queryable$/,
];

export const postgresErrors: DialectErrors = {
  isUniqueViolation: (error) => errorCode(error) === '23505',
  isConnectionFailure,
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

function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}
