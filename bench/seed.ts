import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openSqliteConnection } from '../src/storage/sqlite/driver.js';
import { productName, seededProduct, type NameSource } from './data.js';
import { contractFold } from './expected.js';
import { freePort, startTarget } from './processes.js';

/** Rows per transaction: large enough that commits are rare, small enough to show progress. */
const BATCH = 20_000;

export type Progress = (done: number, total: number) => void;

/**
 * Creates the schema with the migrations of the service build in `dist` (its own `catalogue migrate`,
 * or `cli/migrate.js` in builds older than that command, so that an older build gets its own schema),
 * exactly as a deployment would.
 * @throws with the migration's message when it exits non-zero.
 */
export function migrateWith(dist: string, databaseUrl: string): void {
  const catalogue = join(dist, 'cli', 'catalogue.js');
  const command = existsSync(catalogue) ? [catalogue, 'migrate'] : [join(dist, 'cli', 'migrate.js')];
  execFileSync(process.execPath, command, { env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * Creates the schema with the service's own migrations, then inserts products 1..size in batched
 * transactions straight into the database file.
 */
export async function seedSqlite(dist: string, path: string, size: number, progress: Progress, names: NameSource = productName): Promise<void> {
  migrateWith(dist, `sqlite:${path}`);
  const db = openSqliteConnection(path);
  try {
    // Seeding is not serving: durability per batch would only slow it down.
    db.exec('PRAGMA synchronous = OFF');
    // A build with search keeps a folded copy of each name; written here, the service need not fold a
    // million names when it starts. A wrong copy would fail the search scenario's check.
    const folds = (db.prepare<[string], { name: string }>('SELECT name FROM pragma_table_info(?)').all('product')).some((c) => c.name === 'name_folded');
    const insert = db.prepare<unknown[]>(
      folds ? 'INSERT INTO product (name, barcode, price_cents, name_folded) VALUES (?, ?, ?, ?)' : 'INSERT INTO product (name, barcode, price_cents) VALUES (?, ?, ?)',
    );
    for (let from = 1; from <= size; from += BATCH) {
      const to = Math.min(size, from + BATCH - 1);
      db.exec('BEGIN');
      for (let n = from; n <= to; n++) {
        const p = seededProduct(n, names);
        if (folds) insert.run(p.name, p.barcode, p.priceCents, contractFold(p.name));
        else insert.run(p.name, p.barcode, p.priceCents);
      }
      db.exec('COMMIT');
      progress(to, size);
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
}

/**
 * Seeds a PostgreSQL database the same way: the service's migrations, then batches of rows sent as
 * arrays and expanded with `unnest`, one statement per batch.
 */
export async function seedPostgres(dist: string, url: string, size: number, progress: Progress, nameOf: NameSource = productName): Promise<void> {
  migrateWith(dist, url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'product' AND column_name = 'name_folded'",
    );
    const folds = rows[0]?.n === '1';
    // A GIN index updated row by row makes a million-row load take a quarter of an hour; built once
    // after the load, as a bulk load into any database would, it takes under a minute.
    const { rows: ginIndexes } = await client.query<{ name: string; definition: string }>(
      "SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'product' AND indexdef LIKE '% USING gin %'",
    );
    for (const index of ginIndexes) await client.query(`DROP INDEX ${index.name}`);
    for (let from = 1; from <= size; from += BATCH) {
      const to = Math.min(size, from + BATCH - 1);
      const names: string[] = [];
      const barcodes: string[] = [];
      const prices: number[] = [];
      for (let n = from; n <= to; n++) {
        const p = seededProduct(n, nameOf);
        names.push(p.name);
        barcodes.push(p.barcode);
        prices.push(p.priceCents);
      }
      await client.query(
        folds
          ? 'INSERT INTO product (name, barcode, price_cents, name_folded) SELECT name, barcode, price_cents, folded FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS t(name, barcode, price_cents, folded, n) ORDER BY n'
          : 'INSERT INTO product (name, barcode, price_cents) SELECT name, barcode, price_cents FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(name, barcode, price_cents, n) ORDER BY n',
        folds ? [names, barcodes, prices, names.map(contractFold)] : [names, barcodes, prices],
      );
      progress(to, size);
    }
    for (const index of ginIndexes) await client.query(index.definition);
    // The count's triggers leave a dead row of catalogue_state per insert; a deployment's autovacuum
    // would clear them, the bench does it at once so that the first minute is not the vacuum's.
    await client.query('VACUUM ANALYZE product');
    await client.query('VACUUM ANALYZE catalogue_state');
    // The change feed's table (in builds that have one) was filled by the triggers: vacuumed too, so that
    // the first reads of it do not pay for setting every row's visibility.
    const { rows: feed } = await client.query<{ name: string | null }>("SELECT to_regclass('catalogue_change')::text AS name");
    if (feed[0]?.name !== null && feed[0]?.name !== undefined) await client.query('VACUUM ANALYZE catalogue_change');
  } finally {
    await client.end();
  }
}

/**
 * A scratch database on the server `serverUrl` names, so a run never touches existing data.
 * @returns its URL and a function that drops it.
 */
export async function createScratchPostgres(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `catalogue_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const again = new pg.Client({ connectionString: serverUrl });
      await again.connect();
      try {
        await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.end();
      }
    },
  };
}

/**
 * A catalogue of products 1..`size` for a run of its own, its progress on stderr: an SQLite file in
 * `work` when `database` is undefined, else a scratch database on that PostgreSQL server. Resolves with
 * its `DATABASE_URL` and what drops it (nothing to drop for the file, which goes with `work`).
 */
export async function seedScratch(dist: string, database: string | undefined, size: number, work: string, names: NameSource = productName): Promise<{ url: string; drop(): Promise<void> }> {
  const progress: Progress = (done, total) => void process.stderr.write(`\rseeding ${done.toLocaleString('en')} / ${total.toLocaleString('en')}`);
  let seeded: { url: string; drop(): Promise<void> };
  if (database === undefined) {
    const path = join(work, 'catalogue.db');
    await seedSqlite(dist, path, size, progress, names);
    seeded = { url: `sqlite:${path}`, drop: async () => undefined };
  } else {
    seeded = await createScratchPostgres(database);
    await seedPostgres(dist, seeded.url, size, progress, names);
  }
  process.stderr.write('\n');
  return seeded;
}

/** A catalogue of a run's own, and the service serving it. */
export interface ServedCatalogue {
  /** The run's scratch folder: gone after `close`. */
  readonly work: string;
  readonly kind: 'SQLite' | 'PostgreSQL';
  readonly port: number;
  /** The service's process (with workers, the primary's). */
  readonly pid: number;
  /** Stops the service, drops the catalogue and the scratch folder. */
  close(): Promise<void>;
}

/**
 * A catalogue of products 1..`size` named by `names` (`seedScratch`) served by the build in `dist` on a port of its own,
 * at its default settings, with `env` laid over the environment (a setting given as `undefined` is left out):
 * for the runs that measure one service alone (`--sync`, `--search`, `--slow-readers`).
 */
export async function serveScratchCatalogue(
  dist: string,
  database: string | undefined,
  size: number,
  env: Record<string, string | undefined>,
  names: NameSource = productName,
): Promise<ServedCatalogue> {
  const work = mkdtempSync(join(tmpdir(), 'catalogue-bench-'));
  const { url, drop } = await seedScratch(dist, database, size, work, names);
  const port = await freePort();
  let service;
  try {
    service = await startTarget('service', port, [join(dist, 'server.js')], { LOG_LEVEL: undefined, ...env, DATABASE_URL: url, PORT: String(port) });
  } catch (error) {
    // A service that does not start (a stale build, a setting refused) leaves no scratch database behind.
    await drop();
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
  return {
    work,
    kind: database === undefined ? 'SQLite' : 'PostgreSQL',
    port,
    pid: service.child.pid!,
    close: async () => {
      await service.stop();
      await drop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
