import type { Kysely } from 'kysely';
import type { DatabaseLocation } from '../config.js';
import { KyselyCatalogueStore } from './kysely-store.js';
import { assertSchemaCurrent, migrateToLatest } from './migrations.js';
import { PostgresChangeListener } from './postgres/change-listener.js';
import { PostgresGroupInsert } from './postgres/group-insert.js';
import { connectPostgres, postgresErrors, postgresPoolStats } from './postgres/connect.js';
import { openSqlite, sqliteErrors } from './sqlite/connect.js';
import type { CatalogueStore } from './store.js';
import type { Database } from './schema.js';

export interface StoreOptions {
  /** Most connections a PostgreSQL store keeps open (SQLite uses one). Default 10. */
  readonly poolMax?: number;
  /** Bring the schema up to date (the default), or only check that it is. */
  readonly migrate?: boolean;
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
    const { store } = connect(location, options, 'serve');
    try {
      await store.foldPendingNames();
    } catch (error) {
      await store.close().catch(() => undefined);
      throw error;
    }
    return store;
  }
  // One connection for both on SQLite: a `:memory:` database exists only on the connection that made it.
  const { db, store } = connect(location, options, 'serve');
  try {
    if (migrate) await migrateToLatest(db as unknown as Kysely<unknown>, location.kind);
    else await assertSchemaCurrent(db as unknown as Kysely<unknown>, location.kind);
    // Names bulk-loaded with plain SQL are folded now rather than by the first search.
    await store.foldPendingNames();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}

/** Runs the migrations alone, for `npm run migrate` and before a PostgreSQL store opens. */
export async function migrateStore(location: DatabaseLocation): Promise<string[]> {
  const { db, store } = connect(location, { poolMax: MIGRATION_POOL_MAX }, 'migrate');
  try {
    return await migrateToLatest(db as unknown as Kysely<unknown>, location.kind);
  } finally {
    await store.close();
  }
}

/** The migrator holds one connection for its transaction and may use another beside it. */
const MIGRATION_POOL_MAX = 2;

function connect(
  location: DatabaseLocation,
  options: StoreOptions,
  purpose: 'serve' | 'migrate',
): { db: Kysely<Database>; store: KyselyCatalogueStore } {
  if (location.kind === 'sqlite') {
    const { db, fastPaths, changes } = openSqlite(location.path);
    return { db, store: new KyselyCatalogueStore(db, sqliteErrors, { fastPaths, changes }) };
  }
  const db = connectPostgres(location.url, {
    poolMax: options.poolMax ?? DEFAULT_POOL_MAX,
    queryTimeLimits: purpose === 'serve',
  });
  if (purpose === 'migrate') return { db, store: new KyselyCatalogueStore(db, postgresErrors) };
  const groups = new PostgresGroupInsert(db);
  const store = new KyselyCatalogueStore(db, postgresErrors, {
    poolStats: () => postgresPoolStats(db),
    changes: new PostgresChangeListener(location.url),
    fastPaths: { insertProduct: (product) => groups.insert(product) },
  });
  return { db, store };
}
