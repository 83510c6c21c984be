import { Client } from 'pg';
import type { DatabaseLocation } from '../../src/config.js';
import { ROOT } from './build.js';
import { runCommand } from './child-server.js';

/** A value for a statement's `$1`, `$2`, ... */
export type SqlParameter = string | number | null;

// Run by a separate Node process, as an operator's tool or the import command would be, through the
// SQLite driver this Node uses (better-sqlite3 is not installed where Node has its own). Its rows go to
// standard output as JSON; a refusal goes to standard error as the database's message alone.
// The driver is the one the tests run: compiled beside them in .test-build/ (npm test), or its source
// through tsx.
const COMPILED = import.meta.url.endsWith('.js');
const SQLITE_DRIVER = COMPILED ? new URL('../../src/storage/sqlite/driver.js', import.meta.url).href : './src/storage/sqlite/driver.ts';
const SQLITE_CLIENT = `
import { openSqliteConnection } from ${JSON.stringify(SQLITE_DRIVER)};
const [path, statement, parameters] = process.argv.slice(1);
const db = openSqliteConnection(path);
try {
  db.exec('PRAGMA busy_timeout = 5000');
  const prepared = db.prepare(statement);
  const values = JSON.parse(parameters);
  process.stdout.write(JSON.stringify(prepared.reader ? prepared.all(...values) : (prepared.run(...values), [])));
} catch (error) {
  process.stderr.write(error.message);
  process.exitCode = 1;
} finally {
  db.close();
}
`;

/**
 * Runs one SQL statement on the database behind the service's back, as an operator or another
 * program would: on SQLite from another process opening the same file, on PostgreSQL on a connection
 * of its own. Parameters are written `$1`, `$2`, ... on both. Resolves with the rows the statement
 * returns (none for a write); rejects with the database's message when it refuses the statement.
 */
export async function outsideSql<Row = Record<string, unknown>>(
  location: DatabaseLocation,
  statement: string,
  parameters: readonly SqlParameter[] = [],
): Promise<Row[]> {
  if (location.kind === 'postgres') {
    return withClient(location.url, async (client) => (await client.query(statement, [...parameters])).rows as Row[]);
  }
  // Each $n as a plain ?, with its value in that place: both SQLite drivers bind a list so.
  const values: SqlParameter[] = [];
  const sqliteStatement = statement.replace(/\$(\d+)/g, (_, n: string) => {
    values.push(parameters[Number(n) - 1] ?? null);
    return '?';
  });
  const loader = COMPILED ? [] : ['--import', 'tsx'];
  const run = await runCommand({}, [...loader, '--input-type=module', '-e', SQLITE_CLIENT, location.path, sqliteStatement, JSON.stringify(values)], {
    cwd: ROOT,
  });
  if (run.code !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout) as Row[];
}

/** Runs `work` on a fresh PostgreSQL connection to `url` of its own, closed afterwards. */
export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
