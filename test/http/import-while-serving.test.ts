import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import { databaseUrl, spawnServer, type ChildServer } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { HELD_ROWS, startHeldImport } from '../helpers/held-import.js';
import { postJson, send } from '../helpers/http.js';
import { passesWithin } from '../helpers/passes-within.js';
import { countAll, createProduct, uniqueBarcode } from '../helpers/products.js';

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

interface Load {
  /** What each read answered other than 200 said, for the failure's message. */
  readonly readRefusals: string[];
  reads: number;
  readonly creates: Array<{ status: number; retryAfter: string | undefined; pk?: number; error?: string }>;
}

/**
 * Four readers of product details and four creators (each pausing 20 ms between creates), spread over
 * `servers`, until `stop()`: what a shop's tills do while an import runs.
 */
function useServers(servers: readonly ChildServer[], knownPks: readonly number[]): { load: Load; stop(): Promise<Load> } {
  const load: Load = { readRefusals: [], reads: 0, creates: [] };
  let running = true;
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
  const users = Promise.all([0, 1, 2, 3].flatMap((i) => [reader(i), creator(i)]));
  return {
    load,
    stop: async () => {
      running = false;
      await users;
      return load;
    },
  };
}

describeEachStore('an import in another process while the service reads and creates', { env: false, timeout: 300_000 }, (ctx) => {
  /** A fresh database, some products in it, and `count` service processes over it. */
  async function serving(t: TestContext, count: number) {
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
    const url = servers[0]!.url;
    /** `catalogue import` held mid-way (test/helpers/held-import.ts), the service counting its first step. */
    const holdImport = () => startHeldImport(t, { env, location, count: () => countAll(url) });
    return { servers, url, env, knownPks, holdImport };
  }

  // How long reads wait during an import is a benchmark figure, not a test's. What holds on any machine:
  // while an import is under way (held after its first step, its file not yet all read) no read is
  // refused, creates go on, each answered 201 and stored or refused with Retry-After and not stored, and
  // once it ends every imported row is there.
  for (const processes of [1, 2]) {
    it(`serves every read and answers every create while an import is under way, with ${processes} service process${processes === 1 ? '' : 'es'}`, async (t) => {
      const { servers, url, knownPks, holdImport } = await serving(t, processes);
      const before = await countAll(url);
      const held = await holdImport();
      const { load, stop } = useServers(servers, knownPks);
      t.after(() => stop());
      await passesWithin(60_000, async () => {
        assert.ok(load.creates.filter((c) => c.status === 201).length >= 8, `creates stored while the import is held: ${JSON.stringify(load.creates)}`);
        assert.ok(load.reads >= 40, `${load.reads} reads`);
      }, 20);
      // The rest of the file, while the tills go on.
      assert.deepEqual(await held.finish(), { code: 0, signal: null }, held.child.stderr());
      await stop();

      assert.deepEqual([...new Set(load.readRefusals)], [], `reads refused, of ${load.reads}`);
      // No 500, no dropped connection: each create stored, or refused with Retry-After.
      const stored = load.creates.filter((c) => c.status === 201);
      assert.deepEqual(
        load.creates.filter((c) => c.status !== 201 && (c.status !== 503 || c.retryAfter === undefined)),
        [],
      );
      // Every acknowledged create is there, and so is every imported row.
      for (const { pk } of stored) assert.equal((await send(`${url}/api/v1/shop/product/${pk}`)).status, 200);
      const total = before + HELD_ROWS + stored.length;
      await countBecomes(url, (count) => count === total, `${total} products`);
    });
  }

  it('undoes the whole import when one of its barcodes is taken while it runs', async (t) => {
    const { url, holdImport } = await serving(t, 1);
    const before = await countAll(url);
    const held = await holdImport();
    // Its first step has landed; a till creates the product the file ends with.
    const lastBarcode = held.barcodes.at(-1)!;
    const taken = await postJson(`${url}/api/v1/shop/product/`, JSON.stringify({ name: 'Sold first', barcode: lastBarcode, price: '1.00' }));
    assert.equal(taken.status, 201);
    const imported = await held.finish();
    assert.equal(imported.code, 1);
    assert.match(held.child.stderr(), new RegExp(`A product with barcode ${lastBarcode} is already in the catalogue\\. It was added while the import ran; nothing was imported\\.\\n$`));
    await countBecomes(url, (count) => count === before + 1, `${before + 1} products`);
  });

  it('has a killed import undone by the next bulk write', async (t) => {
    const { url, env, holdImport } = await serving(t, 1);
    const before = await countAll(url);
    const held = await holdImport();
    held.child.process.kill('SIGKILL');
    await held.child.exited;
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-import-after-kill-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const small = join(dir, 'small.csv');
    writeFileSync(small, `name,barcode,price\n${[1, 2, 3].map((n) => `Small ${n},${uniqueBarcode()},1.00\n`).join('')}`);
    assert.equal((await runCli('import', [small], env)).code, 0);
    await countBecomes(url, (count) => count === before + 3, `the killed import undone, the new one's ${before + 3} products`);
  });
});
