import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from 'pg';
import type { DatabaseLocation } from '../../src/config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Run by a separate Node process, as an operator's tool or the import command would be, through the
// SQLite driver this Node uses (better-sqlite3 is not installed where Node has its own).
const SQLITE_WRITER = `
import { openSqliteConnection } from './src/storage/sqlite/driver.ts';
const db = openSqliteConnection(process.argv[1]);
db.exec('PRAGMA busy_timeout = 5000');
db.exec(process.argv[2]);
db.close();
`;

/**
 * Runs SQL on the database behind the service's back: on SQLite from another process writing the same
 * file, on PostgreSQL on a connection of its own.
 */
export async function writeOutside(location: DatabaseLocation, sql: string): Promise<void> {
  if (location.kind === 'sqlite') {
    await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SQLITE_WRITER, location.path, sql], { cwd: ROOT });
    return;
  }
  await withClient(location.url, (client) => client.query(sql));
}

/** Runs `work` on a fresh connection to `url`, closed afterwards. */
export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Retries `check` until it passes or `withinMs` have passed (its last failure is thrown then); with
 * 0 it is tried once.
 */
export async function passesWithin(withinMs: number, check: () => Promise<void>): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (performance.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}
