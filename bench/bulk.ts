/**
 * `npm run bench -- --bulk`: the bulk writes a shop makes, at the sizes it has, timed whole, each
 * beside the same rows loaded by plain SQL in the same run (the database's own ceiling): an import,
 * the same rows again with new names and prices (`import --update`), one SQL UPDATE of every row, an
 * export of them restored (`restore`, into an empty catalogue and with `--replace` in place of itself),
 * and a service started over rows loaded behind its back (PostgreSQL: COPY), until every name is folded.
 */
import { execFile } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { openSqliteConnection } from '../src/storage/sqlite/driver.js';
import { seededProduct } from './data.js';
import { freePort, startTarget } from './processes.js';
import { rate } from './report.js';
import { createScratchPostgres, migrateWith } from './seed.js';
import { send } from './client.js';

const run = promisify(execFile);

export interface BulkOptions {
  readonly dist: string;
  /** `undefined`: SQLite files; otherwise a PostgreSQL server URL to create scratch databases on. */
  readonly database: string | undefined;
  readonly sizes: readonly number[];
}

/** A scratch catalogue: its DATABASE_URL, plain SQL on it, and its removal. */
interface Scratch {
  readonly url: string;
  /** Runs one statement that writes. */
  write(statement: string): Promise<void>;
  /** Whether a name is left without its folded copy. */
  anyUnfolded(): Promise<boolean>;
  /** Loads products 1..size by plain SQL, without folded names. */
  load(size: number): Promise<void>;
  drop(): Promise<void>;
}

/** Runs every bulk scenario at every size and prints one table; returns the exit code. */
export async function runBulk(options: BulkOptions): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'catalogue-bulk-'));
  const rows: string[][] = [];
  const kind = options.database === undefined ? 'SQLite' : 'PostgreSQL';
  console.log(`Bulk writes on ${kind}; Node ${process.version}. Seconds for the whole command; "vs load": its time over the plain SQL load of as many rows in the same run.`);
  try {
    for (const size of options.sizes) {
      const listed = join(work, `products-${size}.csv`);
      const changed = join(work, `changed-${size}.csv`);
      await writeCsv(listed, size, false);
      await writeCsv(changed, size, true);

      const loaded = await scratch(options, work, `load-${size}`);
      const load = await timed(() => loaded.load(size));
      const start = await startAfterLoad(options.dist, loaded.url, loaded);
      await loaded.drop();

      const catalogue = await scratch(options, work, `import-${size}`);
      const env = { ...process.env, DATABASE_URL: catalogue.url };
      const cli = join(options.dist, 'cli', 'catalogue.js');
      const imported = await timed(() => run(process.execPath, [cli, 'import', listed], { env, maxBuffer: 1 << 24 }));
      const updated = await timed(() => run(process.execPath, [cli, 'import', '--update', changed], { env, maxBuffer: 1 << 24 }));
      const byUpdate = await timed(() => catalogue.write('UPDATE product SET price_cents = price_cents + 1'));
      // A backup of that catalogue, put back into an empty one and in place of itself.
      const backup = join(work, `backup-${size}.csv`);
      await run(process.execPath, [cli, 'export', backup], { env, maxBuffer: 1 << 24 });
      const replaced = await timed(() => run(process.execPath, [cli, 'restore', '--replace', backup], { env, maxBuffer: 1 << 24 }));
      await catalogue.drop();
      const empty = await scratch(options, work, `restore-${size}`);
      const restored = await timed(() => run(process.execPath, [cli, 'restore', backup], { env: { ...process.env, DATABASE_URL: empty.url }, maxBuffer: 1 << 24 }));
      await empty.drop();

      const row = (scenario: string, seconds: number, note = '', perRow = true): string[] =>
        [scenario, size.toLocaleString('en'), seconds.toFixed(1), perRow ? rate(size / seconds) : '-', `${(seconds / load).toFixed(2)}x`, note];
      rows.push(
        row('plain SQL load', load, options.database === undefined ? 'one transaction of prepared INSERTs' : 'COPY'),
        row('catalogue import', imported),
        row('catalogue import --update', updated, 'every name and price changed'),
        row('SQL UPDATE of every row', byUpdate),
        row('catalogue restore', restored, 'an export of the catalogue above, into an empty one'),
        row('catalogue restore --replace', replaced, 'the same, in place of as many products'),
        row('start after the load: /healthz', start.healthy, `a search meanwhile answered ${start.searchStatus}`, false),
        row('start after the load: all folded', start.folded, 'from the start of the process'),
      );
    }
    const table = [['scenario', 'rows', 'seconds', 'rows/s', 'vs load', 'note'], ['---', '---', '---', '---', '---', '---'], ...rows];
    console.log(`\n${table.map((cells) => `| ${cells.join(' | ')} |`).join('\n')}`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A price list of products 1..size: as seeded, or with every name and price changed. */
async function writeCsv(path: string, size: number, changed: boolean): Promise<void> {
  async function* lines(): AsyncGenerator<string> {
    yield 'name,barcode,price\n';
    let chunk = '';
    for (let n = 1; n <= size; n++) {
      const p = seededProduct(n);
      const cents = changed ? p.priceCents + 1 : p.priceCents;
      chunk += `"${changed ? `${p.name} (neu)` : p.name}",${p.barcode},${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}\n`;
      if (n % 10_000 === 0) {
        yield chunk;
        chunk = '';
      }
    }
    yield chunk;
  }
  await pipeline(Readable.from(lines()), createWriteStream(path));
}

/** A fresh catalogue, migrated by the build's own `catalogue migrate`. */
async function scratch(options: BulkOptions, work: string, name: string): Promise<Scratch> {
  if (options.database === undefined) {
    const path = join(work, `${name}.db`);
    const url = `sqlite:${path}`;
    migrateWith(options.dist, url);
    const db = openSqliteConnection(path);
    return {
      url,
      write: async (statement) => void db.prepare(statement).run(),
      anyUnfolded: async () => db.prepare('SELECT pk FROM product WHERE name_folded IS NULL LIMIT 1').get() !== undefined,
      load: async (size) => {
        const insert = db.prepare('INSERT INTO product (name, barcode, price_cents) VALUES (?, ?, ?)');
        db.exec('BEGIN');
        for (let n = 1; n <= size; n++) {
          const p = seededProduct(n);
          insert.run(p.name, p.barcode, p.priceCents);
        }
        db.exec('COMMIT');
      },
      drop: async () => {
        db.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
      },
    };
  }
  const database = await createScratchPostgres(options.database);
  migrateWith(options.dist, database.url);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  return {
    url: database.url,
    write: async (statement) => void (await client.query(statement)),
    anyUnfolded: async () => ((await client.query('SELECT pk FROM product WHERE name_folded IS NULL LIMIT 1')).rowCount ?? 0) > 0,
    load: async (size) => {
      async function* csv(): AsyncGenerator<string> {
        let chunk = '';
        for (let n = 1; n <= size; n++) {
          const p = seededProduct(n);
          chunk += `"${p.name}",${p.barcode},${p.priceCents}\n`;
          if (n % 10_000 === 0) {
            yield chunk;
            chunk = '';
          }
        }
        yield chunk;
      }
      await pipeline(Readable.from(csv()), client.query(copyFrom('COPY product (name, barcode, price_cents) FROM STDIN WITH (FORMAT csv)')));
    },
    drop: async () => {
      await client.end();
      await database.drop();
    },
  };
}

/**
 * Starts the service over rows it has not seen (no folded names): seconds until /healthz answers,
 * the status of a search meanwhile (200 exact, or 503 while it catches up), and seconds until no name
 * is left unfolded.
 */
async function startAfterLoad(dist: string, url: string, database: Scratch): Promise<{ healthy: number; folded: number; searchStatus: number }> {
  const port = await freePort();
  const started = performance.now();
  const service = await startTarget('service', port, [join(dist, 'server.js')], { HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: url, LOG_LEVEL: 'warn' });
  try {
    for (;;) {
      const health = await send(port, { method: 'GET', path: '/healthz' }).catch(() => undefined);
      if (health?.status === 200) break;
      await pause(20);
    }
    const healthy = (performance.now() - started) / 1000;
    const search = await send(port, { method: 'GET', path: '/api/v2/shop/products/?search=k%C3%A4se' });
    while (await database.anyUnfolded()) await pause(250);
    return { healthy, folded: (performance.now() - started) / 1000, searchStatus: search.status };
  } finally {
    await service.stop();
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
