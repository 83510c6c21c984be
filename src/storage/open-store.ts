import type { DatabaseLocation } from '../config.js';
import type { StoreDialect } from './dialect.js';
import { KyselyCatalogueStore } from './kysely-store.js';
import { assertSchemaCurrent, migrateToLatest } from './migrations.js';
import { openPostgres } from './postgres/dialect.js';
import { openSqlite } from './sqlite/dialect.js';
import type { CatalogueStore, WriteNotices } from './store.js';

export interface StoreOptions {
  /** Most connections a PostgreSQL store keeps open (SQLite uses one). Default 10. */
  readonly poolMax?: number;
  /** How long a write waits for another writer's lock before it gives up, in milliseconds (default 3,000). */
  readonly writeWaitMs?: number;
  /** Bring the schema up to date (the default), or only check that it is. */
  readonly migrate?: boolean;
  /**
   * Whether SQLite's fast paths replace the shared queries (the default). Off, every statement goes
   * through Kysely as on PostgreSQL: the tests run the store's contract so once more.
   */
  readonly sqliteFastPaths?: boolean;
  /** How this process and the others serving beside it (WORKERS) tell each other of their writes. */
  readonly writeNotices?: WriteNotices;
}

const DEFAULT_POOL_MAX = 10;

/**
 * Connects to the database a deployment names and brings its schema up to date, or with
 * `migrate: false` checks that it is.
 *
 * @throws SchemaNotCurrentError with `migrate: false` when a migration has not run; any other error
 *   when the database cannot be opened or migrated. Nothing is left open then.
 */
export async function openStore(location: DatabaseLocation, options: StoreOptions = {}): Promise<CatalogueStore> {
  const migrate = options.migrate ?? true;
  if (location.kind === 'postgres' && migrate) {
    // Migrating may outlast a request's time limits, or wait that long for another instance that
    // migrates, so it runs on connections of its own; the store's connections keep their limits.
    await migrateStore(location);
    return new KyselyCatalogueStore(openDialect(location, options, 'serve'), options.writeNotices);
  }
  // On SQLite over the store's own connections: a `:memory:` database exists only on the connection that made it.
  const dialect = openDialect(location, options, 'serve');
  try {
    if (migrate) await migrateToLatest(dialect);
    else await assertSchemaCurrent(dialect);
  } catch (error) {
    await dialect.close().catch(() => undefined);
    throw error;
  }
  return new KyselyCatalogueStore(dialect, options.writeNotices);
}

/** Runs the migrations alone, for `npm run migrate` and before a PostgreSQL store opens. */
export async function migrateStore(location: DatabaseLocation): Promise<string[]> {
  const dialect = openDialect(location, { poolMax: MIGRATION_POOL_MAX }, 'migrate');
  try {
    return await migrateToLatest(dialect);
  } finally {
    await dialect.close();
  }
}

/** The migrator holds one connection for its transaction and may use another beside it. */
const MIGRATION_POOL_MAX = 2;

/** The database at `location` as the store's dialect, set up to serve requests or to migrate. */
export function openDialect(location: DatabaseLocation, options: StoreOptions, purpose: 'serve' | 'migrate'): StoreDialect {
  const { writeWaitMs } = options;
  if (location.kind === 'sqlite') return openSqlite(location.path, { fastPaths: options.sqliteFastPaths ?? true, writeWaitMs });
  return openPostgres(location.url, { poolMax: options.poolMax ?? DEFAULT_POOL_MAX, purpose, writeWaitMs });
}
