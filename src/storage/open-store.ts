import type { Kysely } from 'kysely';
import type { DatabaseLocation } from '../config.js';
import { KyselyCatalogueStore } from './kysely-store.js';
import { migrateToLatest } from './migrations.js';
import { openSqlite, sqliteErrors } from './sqlite/connect.js';
import type { CatalogueStore } from './store.js';
import type { Database } from './schema.js';

export interface StoreOptions {
  readonly poolMax?: number;
}

/**
 * Connects to the database a deployment names and brings its schema up to date.
 *
 * @throws when the database cannot be opened or migrated; nothing is left open then.
 */
export async function openStore(location: DatabaseLocation, options: StoreOptions = {}): Promise<CatalogueStore> {
  const { db, store } = connect(location, options);
  try {
    await migrateToLatest(db as unknown as Kysely<unknown>, location.kind);
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}

/** Runs the migrations alone, for `npm run migrate`. */
export async function migrateStore(location: DatabaseLocation): Promise<string[]> {
  const { db, store } = connect(location, {});
  try {
    return await migrateToLatest(db as unknown as Kysely<unknown>, location.kind);
  } finally {
    await store.close();
  }
}

function connect(location: DatabaseLocation, _options: StoreOptions): { db: Kysely<Database>; store: CatalogueStore } {
  if (location.kind === 'sqlite') {
    const { db, fastPaths } = openSqlite(location.path);
    return { db, store: new KyselyCatalogueStore(db, sqliteErrors, fastPaths) };
  }
  throw new Error('PostgreSQL is not supported yet.');
}
