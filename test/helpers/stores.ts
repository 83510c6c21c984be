import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseLocation } from '../../src/config.js';
import type { StoreOptions } from '../../src/storage/open-store.js';
import { withClient } from './outside-sql.js';

/** One database the suite runs against: how to make a fresh, empty one and how to drop it. */
export interface TestStore {
  readonly name: string;
  /** Which database it is: a test that must tell them apart asks this, never the name. */
  readonly kind: DatabaseLocation['kind'];
  /** Why this database's runs are skipped here, or `false` when they run. */
  readonly skip: string | false;
  /** A new empty database location, private to the caller. */
  create(): Promise<{ location: DatabaseLocation; drop(): Promise<void> }>;
  /** How stores over it are opened, beyond the defaults. */
  readonly storeOptions?: StoreOptions;
}

/** SQLite in a file of its own: where a test of what the HTTP layer alone decides runs. */
export const sqlite: TestStore = {
  name: 'sqlite',
  kind: 'sqlite',
  skip: false,
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-test-'));
    return {
      location: { kind: 'sqlite', path: join(dir, 'catalogue.db') },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/**
 * SQLite with every statement going through Kysely, as on PostgreSQL: the fast paths otherwise
 * leave the shared queries to run on SQLite only inside transactions.
 */
const sqliteWithoutFastPaths: TestStore = { ...sqlite, name: 'sqlite without fast paths', storeOptions: { sqliteFastPaths: false } };

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL?.trim() || undefined;

if (TEST_DATABASE_URL === undefined && process.env.REQUIRE_POSTGRES === '1') {
  throw new Error('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set: the PostgreSQL runs cannot be skipped here.');
}

let schemaSequence = 0;

/**
 * Each database is a schema of its own in the database at TEST_DATABASE_URL, created empty and
 * dropped with everything in it; the service reaches it through the URL's search_path.
 */
export const postgres: TestStore = {
  name: 'postgres',
  kind: 'postgres',
  skip: TEST_DATABASE_URL === undefined ? 'TEST_DATABASE_URL is not set: PostgreSQL runs skipped' : false,
  async create() {
    if (TEST_DATABASE_URL === undefined) throw new Error('TEST_DATABASE_URL is not set.');
    schemaSequence += 1;
    const schema = `test_${process.pid}_${Date.now().toString(36)}_${schemaSequence}`;
    await adminQuery(TEST_DATABASE_URL, `create schema ${schema}`);
    return {
      location: { kind: 'postgres', url: withSearchPath(TEST_DATABASE_URL, schema) },
      drop: () => adminQuery(TEST_DATABASE_URL, `drop schema if exists ${schema} cascade`),
    };
  },
};

/** `url` with every connection's search_path set to `schema` alone. */
export function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.toString();
}

async function adminQuery(url: string, text: string): Promise<void> {
  await withClient(url, (client) => client.query(text));
}

/**
 * Every database the HTTP suite loops over, as Kysely's tests loop over dialects. PostgreSQL is
 * listed even when it is not available, with `skip` saying so, so that the report shows it skipped.
 */
export const STORES: readonly TestStore[] = [sqlite, postgres];

/** The databases the store's own contract tests (test/storage/) loop over: `STORES` and both SQLite paths. */
export const CONTRACT_STORES: readonly TestStore[] = [sqlite, sqliteWithoutFastPaths, postgres];
