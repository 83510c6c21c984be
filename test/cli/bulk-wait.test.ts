import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { open, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import type { Product } from '../../src/catalogue/product.js';
import type { DatabaseLocation } from '../../src/config.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { databaseUrl, runCommand } from '../helpers/child-server.js';
import { runCli, startCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { testFolder } from '../helpers/folders.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { HELD_ROWS, startHeldImport, type HeldImport } from '../helpers/held-import.js';
import { passesWithin } from '../helpers/passes-within.js';
import { uniqueBarcode } from '../helpers/products.js';

function folder(t: TestContext): string {
  return testFolder(t, 'bulk-wait');
}

/** A fresh catalogue: the command's environment for it, a store over it, the products it holds. */
interface Catalogue {
  readonly location: DatabaseLocation;
  readonly env: Record<string, string>;
  readonly store: CatalogueStore;
  readonly products: readonly Product[];
}

/** `catalogue import` held mid-way in `shop` (test/helpers/held-import.ts). */
function holdImport(t: TestContext, shop: Catalogue): Promise<HeldImport> {
  return startHeldImport(t, { ...shop, count: async () => (await shop.store.describeCatalogue()).count });
}

// A bound for a hang, not for speed: beside CI's other lanes, two busy loops and a second test file, the
// restore suite took more than 120 s, as this one could.
describeEachStore('bulk writes one at a time: --wait', { env: false, timeout: 600_000 }, (ctx) => {
  /** A fresh catalogue of `count` products. */
  const catalogue = async (t: TestContext, count: number): Promise<Catalogue> => {
    const { location, open: openStore } = await ctx.freshDatabase(t);
    const store = await openStore();
    const products: Product[] = [];
    for (let i = 0; i < count; i++) products.push(await store.createProduct({ name: `Before ${i}`, barcode: uniqueBarcode(), priceCents: 100 + i }));
    return { location, env: { DATABASE_URL: databaseUrl(location) }, store, products };
  };
  const underWay = (held: HeldImport): string => `Another import is under way (${held.owner}, since ${held.startedAt}); one bulk write runs at a time. Try again when it has finished.`;

  it('without --wait, stops at once while another bulk write is under way, naming it, and changes nothing', async (t) => {
    const shop = await catalogue(t, 1);
    const { env, store, products } = shop;
    const held = await holdImport(t, shop);
    assert.deepEqual(await runCli('remove', [products[0]!.barcode], env), { code: 1, stdout: '', stderr: `${underWay(held)} Nothing was removed.\n` });
    assert.deepEqual(await store.findProduct(products[0]!.pk), products[0]);
    assert.deepEqual(await held.finish(), { code: 0, signal: null });
    assert.equal((await store.describeCatalogue()).count, 1 + HELD_ROWS);
  });

  it('counts an import that is still checking its file as under way: a removal started meanwhile stops at once', async (t) => {
    const shop = await catalogue(t, 1);
    const { env, store, products, location } = shop;
    const dir = folder(t);
    const file = join(dir, 'checking.csv');
    assert.equal((await runCommand({}, [file], { command: 'mkfifo' })).code, 0);
    const rows = Array.from({ length: 10 }, (_, i) => `Checked ${i},${uniqueBarcode()},1.00\n`).join('');
    const child = await startCli('import', [file], env);
    t.after(() => child.process.kill('SIGKILL'));
    // The check pass reads the first rows and waits for the rest of the file.
    const pipe = await open(file, 'w');
    t.after(() => pipe.close().catch(() => undefined));
    await pipe.write(`name,barcode,price\n${rows}`);
    let running: { owner: string; started_at: number | string } | undefined;
    await passesWithin(30_000, async () => {
      [running] = await outsideSql<{ owner: string; started_at: number | string }>(location, 'SELECT owner, started_at FROM bulk_write');
      assert.ok(running !== undefined, 'the import checking its file has started its bulk write');
    }, 20);
    const since = new Date(Number(running!.started_at)).toISOString();
    assert.deepEqual(await runCli('remove', [products[0]!.barcode], env), {
      code: 1,
      stdout: '',
      stderr: `Another import is under way (${running!.owner}, since ${since}); one bulk write runs at a time. Try again when it has finished. Nothing was removed.\n`,
    });
    assert.deepEqual(await store.findProduct(products[0]!.pk), products[0]);
    // The writing pass opens the file again: it finds a plain file of the same rows put in the pipe's
    // place, while the check, which still reads the pipe, ends when the pipe is closed.
    const plain = join(dir, 'plain.csv');
    await writeFile(plain, `name,barcode,price\n${rows}`);
    await rename(plain, file);
    await pipe.close();
    assert.deepEqual(await child.exited, { code: 0, signal: null }, child.stderr());
    assert.equal((await store.describeCatalogue()).count, 11);
  });

  it('with --wait, a price list and a removal wait for the import under way, saying so, and then run in turn', async (t) => {
    const shop = await catalogue(t, 2);
    const { env, store, products } = shop;
    const [repriced, removed] = products as [Product, Product];
    const prices = join(folder(t), 'prices.csv');
    writeFileSync(prices, `name,barcode,price\nRepriced,${repriced.barcode},9.99\n`);
    const held = await holdImport(t, shop);
    const updating = await startCli('import', ['--update', '--wait', prices], env);
    const removing = await startCli('remove', ['--wait=600', removed.barcode], env);
    const waiting = `Waiting for the import started at ${held.startedAt} by ${held.owner} to finish`;
    await passesWithin(30_000, async () => {
      assert.equal(updating.stderr().split('\n')[0], `${waiting}…`);
      assert.equal(removing.stderr().split('\n')[0], `${waiting} (at most 600 s)…`);
    }, 20);
    // Both wait: the import is still held, and nothing of theirs is written.
    assert.deepEqual([updating.process.exitCode, removing.process.exitCode], [null, null]);
    assert.deepEqual(await store.findProduct(repriced.pk), repriced);
    assert.deepEqual(await store.findProduct(removed.pk), removed);

    assert.deepEqual(await held.finish(), { code: 0, signal: null });
    assert.deepEqual(await updating.exited, { code: 0, signal: null });
    assert.deepEqual(await removing.exited, { code: 0, signal: null });
    assert.equal(updating.stderr().trim().split('\n').at(-1), `Updated the catalogue from ${prices}: 0 added, 1 changed, 0 unchanged.`);
    assert.equal(removing.stderr().trim().split('\n').at(-1), 'Removed 1 product.');
    assert.deepEqual(await store.findProduct(repriced.pk), { ...repriced, name: 'Repriced', priceCents: 999 });
    assert.equal(await store.findProduct(removed.pk), undefined);
    assert.equal((await store.describeCatalogue()).count, 1 + HELD_ROWS);
  });

  it('with --wait=SECONDS, stops once SECONDS have passed with the bulk write still under way, exit status 1, having changed nothing', async (t) => {
    const shop = await catalogue(t, 1);
    const { env, store, products } = shop;
    const held = await holdImport(t, shop);
    assert.deepEqual(await runCli('remove', ['--wait=1', products[0]!.barcode], env), {
      code: 1,
      stdout: '',
      stderr: `Waiting for the import started at ${held.startedAt} by ${held.owner} to finish (at most 1 s)…\n${underWay(held)} Waited 1 s for it to finish. Nothing was removed.\n`,
    });
    assert.deepEqual(await store.findProduct(products[0]!.pk), products[0]);
    assert.deepEqual(await held.finish(), { code: 0, signal: null });
  });

  it('with --wait, undoes a bulk write whose process died first, as without, then runs', async (t) => {
    const shop = await catalogue(t, 1);
    const { env, store, products } = shop;
    const held = await holdImport(t, shop);
    held.child.process.kill('SIGKILL');
    await held.child.exited;
    // It says so: the products the import had written go as the command begins.
    assert.deepEqual(await runCli('remove', ['--wait=600', products[0]!.barcode], env), {
      code: 0,
      stdout: '',
      stderr: `First undid the import started at ${held.startedAt} by ${held.owner}, which its process had left half-written.\nRemoved 1 product.\n`,
    });
    // The killed import's first step is undone, and the product removed.
    assert.equal((await store.describeCatalogue()).count, 0);
  });
});
