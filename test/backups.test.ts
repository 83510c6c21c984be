import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import type { DatabaseLocation } from '../src/config.js';
import { OfflineCopy } from '../examples/till/offline-copy.js';
import { databaseUrl, runCommand } from './helpers/child-server.js';
import { runCli } from './helpers/cli.js';
import { describeEachStore } from './helpers/each-store.js';
import { send } from './helpers/http.js';
import { outsideSql } from './helpers/outside-sql.js';
import { passesWithin } from './helpers/passes-within.js';
import { createProduct, listAll, uniqueBarcode } from './helpers/products.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { TcpProxy } from './helpers/tcp-proxy.js';

/** How long a till may take to be in step: it only proves that it gets there (it takes well under a second). */
const IN_STEP_MS = 60_000;

interface ChangePage {
  catalogue_id: string;
  version: number;
}

/** A CSV file of products, as an operator would import it. */
function productFile(dir: string, name: string, rows: ReadonlyArray<{ name: string; barcode: string; price: string }>): string {
  const path = join(dir, name);
  writeFileSync(path, ['name,barcode,price', ...rows.map((row) => `${row.name},${row.barcode},${row.price}`), ''].join('\n'));
  return path;
}

/**
 * A test's PostgreSQL catalogue is a schema of its own (its URL's search_path): pg_dump is told the
 * schema, and both tools the database's URL without it (libpq reads no `+` as a space there).
 */
function schemaOf(location: DatabaseLocation & { kind: 'postgres' }): { schema: string; url: string } {
  const url = new URL(location.url);
  const schema = /search_path=(\S+)/.exec(url.searchParams.get('options') ?? '')![1]!;
  url.searchParams.delete('options');
  return { schema, url: url.toString() };
}

async function feedPage(url: string): Promise<ChangePage> {
  return (await send(`${url}/api/v2/shop/changes?limit=1`)).json as ChangePage;
}

/**
 * The ways docs/OPERATIONS.md ("Backups") backs a catalogue up and restores it, each as its recipe
 * says: `backup` runs while the service serves; `restore` is given the server and returns the one
 * serving afterwards (the same, or another started after the restore).
 */
interface Recipe {
  readonly name: string;
  backup(location: DatabaseLocation, dir: string): Promise<void>;
  restore(location: DatabaseLocation, dir: string, server: RunningServer): Promise<RunningServer>;
}

const ok = (result: { code: number | null; stderr: string }, what: string): void => assert.equal(result.code, 0, `${what}: ${result.stderr}`);

const exportAndRestore: Recipe = {
  name: 'catalogue export, then catalogue restore --replace, while the service runs',
  async backup(location, dir) {
    ok(await runCli('export', [join(dir, 'backup.csv')], { DATABASE_URL: databaseUrl(location) }), 'export');
  },
  async restore(location, dir, server) {
    const restored = await runCli('restore', ['--replace', join(dir, 'backup.csv')], { DATABASE_URL: databaseUrl(location) });
    ok(restored, 'restore');
    assert.match(restored.stderr, /^Restored 1000 products from .*backup\.csv, in place of the 1100 products there before\. Tills following the change feed start their copies again\.\n$/);
    return server;
  },
};

/** SQLite: `VACUUM INTO` while the service runs; PostgreSQL: pg_dump. The restore stops the service, puts the database back, and runs `catalogue new-identity`. */
const databaseItself: Recipe = {
  name: 'the database itself (SQLite VACUUM INTO, PostgreSQL pg_dump), put back while the service is stopped, then catalogue new-identity',
  async backup(location, dir) {
    if (location.kind === 'sqlite') {
      // The recipe's statement, through the SQLite that Node itself has (better-sqlite3 on Node 20).
      await outsideSql(location, `VACUUM INTO '${join(dir, 'backup.db')}'`);
    } else {
      const { schema, url } = schemaOf(location);
      ok(await runCommand({}, ['--format=custom', `--schema=${schema}`, `--file=${join(dir, 'backup.dump')}`, url], { command: 'pg_dump' }), 'pg_dump');
    }
  },
  async restore(location, dir, server) {
    await server.stop();
    if (location.kind === 'sqlite') {
      for (const left of ['-wal', '-shm']) rmSync(`${location.path}${left}`, { force: true });
      copyFileSync(join(dir, 'backup.db'), location.path);
    } else {
      ok(await runCommand({}, ['--clean', '--if-exists', '--no-owner', `--dbname=${schemaOf(location).url}`, join(dir, 'backup.dump')], { command: 'pg_restore' }), 'pg_restore');
    }
    ok(await runCli('new-identity', [], { DATABASE_URL: databaseUrl(location) }), 'new-identity');
    return startServer(location);
  },
};

describeEachStore('backups, as docs/OPERATIONS.md says, with a till following the change feed', { env: false, timeout: 300_000 }, (ctx) => {
  for (const recipe of [exportAndRestore, databaseItself]) {
    it(`${recipe.name}: backup at version 1,000, the till at 1,200, restore, 300 creates: the till's copy ends equal to the catalogue`, async (t: TestContext) => {
      const database = await ctx.freshDatabase(t);
      const { location } = database;
      const env = { DATABASE_URL: databaseUrl(location) };
      const dir = mkdtempSync(join(tmpdir(), 'catalogue-backups-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));

      // Versions 1 to 1,000: the catalogue when it is backed up.
      const stock = Array.from({ length: 1_000 }, (_, i) => ({ name: `Stock ${i + 1}`, barcode: uniqueBarcode(), price: '1.00' }));
      ok(await runCli('import', [productFile(dir, 'stock.csv', stock)], env), 'import');
      let server = await startServer(location);
      t.after(() => server.stop());
      const proxy = new TcpProxy({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
      await proxy.open();
      t.after(() => proxy.cut());
      const feedUrl = `http://127.0.0.1:${proxy.port}`;

      const till = new OfflineCopy(feedUrl);
      await till.sync();
      const following = till.follow();
      t.after(() => following.stop());
      await following.caughtUp;
      const backedUp = await listAll(server.url);
      const { catalogue_id: before, version: backupVersion } = await feedPage(server.url);
      assert.equal(backupVersion, 1_000);
      await recipe.backup(location, dir);

      // Versions 1,001 to 1,200: 100 prices changed, 100 products added; the till hears of each.
      const priceList = [...stock.slice(0, 100).map((row) => ({ ...row, price: '9.99' })), ...Array.from({ length: 100 }, (_, i) => ({ name: `Added ${i + 1}`, barcode: uniqueBarcode(), price: '2.00' }))];
      ok(await runCli('import', ['--update', productFile(dir, 'prices.csv', priceList)], env), 'price list');
      await passesWithin(IN_STEP_MS, async () => assert.equal(till.version, 1_200), 20);
      assert.equal(till.products().length, 1_100);

      server = await recipe.restore(location, dir, server);
      proxy.retarget({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
      const restoredPage = await feedPage(server.url);
      assert.notEqual(restoredPage.catalogue_id, before);
      assert.deepEqual(await listAll(server.url), backedUp);

      const created = [];
      for (let i = 0; i < 300; i++) created.push(await createProduct(server.url, { name: `After the restore ${i + 1}` }));
      const catalogue = await listAll(server.url);
      assert.deepEqual(catalogue, [...backedUp, ...created]);
      if (recipe === databaseItself) {
        // The history the backup had goes on: its versions again, which the till had seen for other changes.
        assert.equal((await feedPage(server.url)).version, 1_300);
        // A pk is drawn after the backup's highest, as when the backup was taken.
        assert.equal(created[0]!.pk, 1_001);
      } else {
        // Never a pk drawn before: the 100 products added after the backup keep theirs for ever.
        assert.equal(created[0]!.pk, 1_101);
      }
      await passesWithin(IN_STEP_MS, async () => {
        assert.equal(till.catalogue, restoredPage.catalogue_id);
        assert.deepEqual(till.products(), catalogue);
      }, 20);
    });
  }
});
