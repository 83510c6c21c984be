import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { databaseUrl, spawnServer, type ChildServer } from '../helpers/child-server.js';
import { runCli, startCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { passesWithin } from '../helpers/passes-within.js';
import { countAll, createProduct, uniqueBarcode } from '../helpers/products.js';

/**
 * Rows the import writes while the service is used. The figures in docs/PERFORMANCE.md were taken
 * with IMPORT_WHILE_SERVING_ROWS=300000; the default keeps the suite quick.
 */
const ROWS = Number(process.env['IMPORT_WHILE_SERVING_ROWS'] ?? 40_000);

/**
 * The catalogue's count as the service answers it, once it is `expected`. The import is another
 * process: on PostgreSQL its writes reach each of the service's worker processes with the database's
 * notice, milliseconds after their commit (docs/OPERATIONS.md), and a worker not yet told answers
 * from before.
 */
async function countBecomes(url: string, expected: (count: number) => boolean, what: string): Promise<void> {
  await passesWithin(10_000, async () => {
    const count = await countAll(url);
    assert.ok(expected(count), `${what} (count ${count})`);
  });
}

/**
 * Resolves once the service counts more than `before` products: the import's first steps have landed.
 * Fails if the import ends first, having failed or landed nothing the service was told of.
 */
async function firstStepsLanded(url: string, before: number, importEnded: Promise<unknown>): Promise<void> {
  let ended = false;
  void importEnded.finally(() => (ended = true));
  while ((await countAll(url)) === before) {
    if (ended) {
      // Its rows may still be on their way to the service (PostgreSQL's notice); a failed import has none.
      await countBecomes(url, (count) => count !== before, `the import's rows, after it ended with ${JSON.stringify(await importEnded)}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A price list of `rows` new products, barcodes from a range no other test uses. */
function importFile(t: TestContext, rows: number, firstBarcode = 0): { path: string; lastBarcode: string } {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-import-load-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lines = ['name,barcode,price'];
  let barcode = '';
  for (let n = 0; n < rows; n++) {
    const first12 = `23${String(process.pid % 1000).padStart(3, '0')}${String(firstBarcode + n).padStart(7, '0')}`;
    barcode = first12 + String(ean13CheckDigit(first12));
    lines.push(`Imported ${n},${barcode},${(n % 1000) + 1}.99`);
  }
  const path = join(dir, 'prices.csv');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { path, lastBarcode: barcode };
}

interface Load {
  /** What each read answered other than 200 said, for the failure's message. */
  readonly readRefusals: string[];
  readonly reads: number;
  readonly creates: Array<{ status: number; retryAfter: string | undefined; pk?: number; error?: string }>;
}

/**
 * Four readers of product details and four creators (each pausing 20 ms between creates), spread over
 * `servers`, until `done` settles: what a shop's tills do while an import runs.
 */
async function useWhile(servers: readonly ChildServer[], knownPks: readonly number[], done: Promise<unknown>): Promise<Load> {
  const load = { readRefusals: [] as string[], reads: 0, creates: [] as Load['creates'] };
  let running = true;
  void done.finally(() => (running = false));
  const reader = async (i: number): Promise<void> => {
    for (let n = i; running; n += 1) {
      const pk = knownPks[n % knownPks.length]!;
      const res = await send(`${servers[n % servers.length]!.url}/api/v1/shop/product/${pk}`);
      load.reads += 1;
      if (res.status !== 200) load.readRefusals.push(`${res.status} ${res.text}`);
    }
  };
  const creator = async (i: number): Promise<void> => {
    for (let n = i; running; n += 1) {
      try {
        const res = await postJson(`${servers[n % servers.length]!.url}/api/v1/shop/product/`, JSON.stringify({ name: `Sold meanwhile ${n}`, barcode: uniqueBarcode(), price: '2.50' }));
        load.creates.push({ status: res.status, retryAfter: res.headers['retry-after'], ...(res.status === 201 ? { pk: (res.json as { pk: number }).pk } : {}) });
      } catch (error) {
        load.creates.push({ status: 0, retryAfter: undefined, error: String(error) });
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await Promise.all([0, 1, 2, 3].flatMap((i) => [reader(i), creator(i)]));
  return load;
}

describeEachStore('an import in another process while the service reads and creates', { env: false, timeout: 1200_000 }, (ctx) => {
  /** A fresh database, some products in it, and `count` service processes over it. */
  async function serving(t: TestContext, count: number): Promise<{ servers: ChildServer[]; env: Record<string, string>; knownPks: number[] }> {
    const { location, drop } = await ctx.testStore.create();
    const env = { DATABASE_URL: databaseUrl(location) };
    const servers: ChildServer[] = [];
    t.after(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await drop();
    });
    // One after the other: the first migrates.
    for (let i = 0; i < count; i++) servers.push(await spawnServer(env));
    const knownPks: number[] = [];
    for (let i = 0; i < 20; i++) knownPks.push((await createProduct(servers[0]!.url, { name: `Shelf ${i}` })).pk);
    return { servers, env, knownPks };
  }

  // How long reads wait during an import is a benchmark figure (docs/PERFORMANCE.md, taken with
  // IMPORT_WHILE_SERVING_ROWS=300000 on a quiet machine). What holds on any machine: no read is refused,
  // creates go on between the import's steps, each is answered 201 and stored or refused with
  // Retry-After and not stored, and every imported row is there.
  for (const processes of [1, 2]) {
    it(`serves every read and answers every create while an import runs, with ${processes} service process${processes === 1 ? '' : 'es'}`, async (t) => {
      const { servers, env, knownPks } = await serving(t, processes);
      const file = importFile(t, ROWS, processes * 1_000_000);
      const before = await countAll(servers[0]!.url);
      const importing = runCli('import', ['--verbose', file.path], env);
      const load = await useWhile(servers, knownPks, importing);
      const imported = await importing;
      assert.equal(imported.code, 0, imported.stderr);

      assert.deepEqual([...new Set(load.readRefusals)], [], `reads refused, of ${load.reads}`);
      // No 500, no dropped connection: each create stored, or refused with Retry-After.
      const stored = load.creates.filter((c) => c.status === 201);
      const refused = load.creates.filter((c) => c.status !== 201);
      assert.deepEqual(
        refused.filter((c) => c.status !== 503 || c.retryAfter === undefined),
        [],
      );
      // The import writes in short steps and lets the service's creates in between them.
      assert.ok(stored.length > 0, `none of ${load.creates.length} creates made while the import ran was stored`);
      // Every acknowledged create is there, and so is every imported row.
      for (const { pk } of stored) assert.equal((await send(`${servers[0]!.url}/api/v1/shop/product/${pk}`)).status, 200);
      const total = before + ROWS + stored.length;
      await countBecomes(servers[0]!.url, (count) => count === total, `${total} products`);
      t.diagnostic(`${ROWS} rows; ${load.reads} reads; creates ${stored.length} stored, ${refused.length} refused; ${imported.stderr.trim().split('\n').join(' ')}`);
    });
  }

  it('undoes the whole import when one of its barcodes is taken while it runs', async (t) => {
    const { servers, env } = await serving(t, 1);
    const { url } = servers[0]!;
    const file = importFile(t, ROWS, 3_000_000);
    const before = await countAll(url);
    const importing = runCli('import', [file.path], env);
    // Once its first steps have landed, a till creates the product the file ends with.
    await firstStepsLanded(url, before, importing);
    const taken = await postJson(`${url}/api/v1/shop/product/`, JSON.stringify({ name: 'Sold first', barcode: file.lastBarcode, price: '1.00' }));
    assert.equal(taken.status, 201);
    const imported = await importing;
    assert.equal(imported.code, 1);
    assert.match(imported.stderr, new RegExp(`A product with barcode ${file.lastBarcode} is already in the catalogue\\. It was added while the import ran; nothing was imported\\.\\n$`));
    await countBecomes(url, (count) => count === before + 1, `${before + 1} products`);
  });

  it('has a killed import undone by the next bulk write', async (t) => {
    const { servers, env } = await serving(t, 1);
    const { url } = servers[0]!;
    const file = importFile(t, ROWS, 4_000_000);
    const before = await countAll(url);
    const importing = await startCli('import', [file.path], env);
    await firstStepsLanded(url, before, importing.exited);
    importing.process.kill('SIGKILL');
    await importing.exited;
    await countBecomes(url, (count) => count > before, 'the killed import had landed some steps');
    const small = importFile(t, 3, 5_000_000);
    assert.equal((await runCli('import', [small.path], env)).code, 0);
    await countBecomes(url, (count) => count === before + 3, `the killed import undone, the new one's ${before + 3} products`);
  });
});

