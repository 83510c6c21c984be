import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { OfflineCopy } from '../../examples/till/offline-copy.js';
import { CatalogueError, createTill, type Till } from '../../examples/till/till.js';
import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { ROOT } from '../helpers/build.js';
import { runCommand } from '../helpers/child-server.js';
import { describeEachStore } from '../helpers/each-store.js';
import { runPackageBin } from '../helpers/package-bin.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { startFreshServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const TYPES = join(ROOT, 'examples/till/catalogue-api.ts');
const TOKEN = 'till-token-0123456789abcdef';

/** A UPC-A (12 digits) and the EAN-13 the catalogue keeps for it. */
function upcA(): { upc: string; ean13: string } {
  const ean13 = `0${uniqueBarcode().slice(1, 12)}`;
  const full = ean13 + String(ean13CheckDigit(ean13));
  return { upc: full.slice(1), ean13: full };
}

describe('the till example: its types', () => {
  it('are what openapi-typescript makes of the live document (regenerate them as examples/till/README.md says)', async () => {
    const server = await startFreshServer(sqlite);
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-till-types-'));
    try {
      const generated = join(dir, 'catalogue-api.ts');
      const result = await runPackageBin('openapi-typescript', 'openapi-typescript', [`${server.url}/openapi.json`, '-o', generated]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(readFileSync(TYPES, 'utf8'), readFileSync(generated, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await server.stop();
    }
  });
});

describeEachStore('the till example against the service', { env: { API_TOKEN: TOKEN } }, (ctx) => {
  let till: Till;
  before(async () => {
    till = createTill({ baseUrl: ctx.server.url, token: TOKEN });
  });

  it('creates a product with an Idempotency-Key, and a retry with the key creates nothing more', async () => {
    const espresso = { name: 'Espresso 1 kg', barcode: uniqueBarcode(), price: '12.99' };
    const key = 'till-7-receipt-0001';
    const first = await till.create(espresso, key);
    assert.deepEqual(first, { product: { pk: first.product.pk, ...espresso }, replayed: false });
    const retry = await till.create({ ...espresso, price: 12.99 }, key);
    assert.deepEqual(retry, { product: first.product, replayed: true });
    assert.deepEqual((await listAll(ctx.server.url)).filter((p) => p.barcode === espresso.barcode), [first.product]);
  });

  it('reports refusals with the problem document', async () => {
    const refusal = async (attempt: Promise<unknown>): Promise<CatalogueError> => {
      const error = await attempt.then(
        () => assert.fail('accepted'),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof CatalogueError);
      return error;
    };
    const invalid = await refusal(till.create({ name: 'Pen', barcode: '4006381333937', price: '1.00' }));
    assert.deepEqual([invalid.status, invalid.problem?.errors], [400, { barcode: ['EAN-13 check digit is wrong: expected 1, got 7.'] }]);
    const taken = await till.create({ name: 'Tea', barcode: uniqueBarcode(), price: '2.50' });
    const duplicate = await refusal(till.create({ name: 'Tea again', barcode: taken.product.barcode, price: '2.50' }));
    assert.equal(duplicate.status, 409);
    const reused = await refusal(till.create({ name: 'Other', barcode: uniqueBarcode(), price: '1.00' }, 'till-7-receipt-0001'));
    assert.equal(reused.status, 422);
    const anonymous = createTill({ baseUrl: ctx.server.url });
    const unauthorized = await refusal(anonymous.create({ name: 'Sneaky', barcode: uniqueBarcode(), price: '1.00' }));
    assert.equal(unauthorized.status, 401);
  });

  it('scans a barcode, an EAN-13 or a UPC-A, and says when the catalogue has none', async () => {
    const { upc, ean13 } = upcA();
    const { product: crisps } = await till.create({ name: 'Crisps 150 g', barcode: ean13, price: '1.89' });
    const { product: milk } = await till.create({ name: 'Oat milk 1 l', barcode: uniqueBarcode(), price: '2.49' });
    assert.deepEqual(await till.scan(milk.barcode), milk);
    assert.deepEqual(await till.scan(upc), crisps);
    assert.equal(await till.scan(uniqueBarcode()), undefined);
  });

  it('reads a product by its pk, and says when there is none', async () => {
    const { product } = await till.create({ name: 'Honey 350 g', barcode: uniqueBarcode(), price: '7.80' });
    assert.deepEqual(await till.product(product.pk), product);
    assert.equal(await till.product(product.pk + 1000), undefined);
  });

  it('pages through the whole catalogue in pk order by following next', async () => {
    const everything = await listAll(ctx.server.url);
    const pages: Array<Array<{ name: string; price: string; barcode: string }>> = [];
    for await (const page of till.pages(2)) pages.push(page);
    assert.deepEqual(pages.map((page) => page.length), [...Array(Math.floor(everything.length / 2)).fill(2), ...(everything.length % 2 === 1 ? [1] : [])]);
    assert.deepEqual(pages.flat(), everything.map(({ name, price, barcode }) => ({ name, price, barcode })));
  });
});

describeEachStore('the till example\'s offline copy', (ctx) => {
  it('makes a whole copy from the change feed, follows its stream, and scans without a round trip', async () => {
    const till = createTill({ baseUrl: ctx.server.url });
    const { product: coffee } = await till.create({ name: 'Coffee 500 g', barcode: uniqueBarcode(), price: '6.50' });
    const copy = new OfflineCopy(ctx.server.url);
    await copy.sync(2);
    assert.deepEqual(copy.products(), await listAll(ctx.server.url));
    assert.deepEqual(copy.scan(coffee.barcode), coffee);

    const following = copy.follow();
    try {
      await following.caughtUp;
      const { product: tea } = await till.create({ name: 'Tea 100 g', barcode: uniqueBarcode(), price: '3.10' });
      // A change reaches a stream within a second (docs/API.md): ten of them bound one that never comes.
      await passesWithin(10_000, async () => assert.deepEqual(copy.scan(tea.barcode), tea));
      // A removal reaches the copy too.
      await outsideSql(ctx.server.location, 'DELETE FROM product WHERE pk = $1', [coffee.pk]);
      await passesWithin(10_000, async () => assert.equal(copy.scan(coffee.barcode), undefined));
    } finally {
      following.stop();
    }
    // Offline meanwhile: the copy still answers; back online, a sync brings what it missed.
    const { product: honey } = await till.create({ name: 'Honey 350 g', barcode: uniqueBarcode(), price: '7.80' });
    assert.equal(copy.scan(honey.barcode), undefined);
    await copy.sync();
    assert.deepEqual(copy.products(), await listAll(ctx.server.url));
  });
});

describe('the till example: its demo', () => {
  it('runs a till morning against a live service', async () => {
    const server = await startFreshServer(sqlite);
    try {
      const { code, stdout, stderr } = await runCommand({}, ['--import', 'tsx', 'examples/till/main.ts', server.url], { cwd: ROOT });
      assert.equal(code, 0, stderr);
      const created = (await listAll(server.url))[0]!;
      assert.deepEqual(stdout.split('\n'), [
        `created: ${JSON.stringify(created)}`,
        `retried: pk ${created.pk}, replayed true`,
        `scanned ${created.barcode}: ${created.name} at ${created.price}`,
        `product ${created.pk}: ${created.name} at ${created.price}`,
        'catalogue: products 1, pages of 50 1',
        'offline copy: products 1 at version 1',
        `offline copy: heard of Bread rolls, 6 (pk ${created.pk + 1}); products 2`,
        '',
      ]);
    } finally {
      await server.stop();
    }
  });
});
