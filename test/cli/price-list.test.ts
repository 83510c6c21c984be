import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { databaseUrl } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { passesWithin } from '../helpers/passes-within.js';
import { send } from '../helpers/http.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { startServer, type RunningServer } from '../helpers/server.js';

interface Product {
  readonly pk: number;
  readonly name: string;
  readonly barcode: string;
  readonly price: string;
}

/** What a client sees of the catalogue: bodies and ETags of a detail, the v1 list and a v2 page. */
async function observe(url: string, detailPk: number) {
  const detail = await send(`${url}/api/v1/shop/product/${detailPk}`);
  const list = await send(`${url}/api/v1/shop/products`);
  const page = await send(`${url}/api/v2/shop/products?limit=3&offset=1`);
  for (const res of [detail, list, page]) assert.equal(res.status, 200, res.text);
  return {
    detail: { body: detail.json, etag: detail.headers.etag },
    list: { body: list.json, etag: list.headers.etag },
    page: { body: page.json, etag: page.headers.etag },
  };
}

function csv(rows: ReadonlyArray<Omit<Product, 'pk'>>, extra: readonly string[] = []): string {
  return ['name,barcode,price', ...rows.map((p) => `"${p.name.replaceAll('"', '""')}",${p.barcode},${p.price}`), ...extra].join('\n') + '\n';
}

const pageOf = (products: readonly Product[], offset: number, limit: number, url: string) => ({
  count: products.length,
  next: offset + limit < products.length ? `${url}/api/v2/shop/products?limit=${limit}&offset=${offset + limit}` : null,
  previous: offset === 0 ? null : `${url}/api/v2/shop/products?limit=${limit}`,
  results: products.slice(offset, offset + limit).map(({ name, price, barcode }) => ({ name, price, barcode })),
});

describeEachStore('catalogue import --update, seen by running servers at once', { env: false, timeout: 600_000 }, (ctx) => {
  let servers: RunningServer[] = [];
  let env: Record<string, string>;
  let drop: () => Promise<void>;
  let folder: string;
  let catalogue: Product[] = [];

  const fileOf = (name: string, content: string): string => {
    const path = join(folder, name);
    writeFileSync(path, content);
    return path;
  };
  /**
   * Every server answers `products`: on SQLite at once (each request checks the file's version), on
   * PostgreSQL once the database's notice of the commit has reached it, milliseconds later; ten seconds
   * bound a notice that never comes.
   */
  const expectEverywhere = async (products: readonly Product[], detailPk: number) => {
    for (const server of servers) {
      await passesWithin(ctx.testStore.kind === 'postgres' ? 10_000 : 0, async () => {
        const seen = await observe(server.url, detailPk);
        assert.deepEqual(seen.detail.body, products.find((p) => p.pk === detailPk));
        assert.deepEqual(seen.list.body, products);
        assert.deepEqual(seen.page.body, pageOf(products, 1, 3, server.url));
      });
    }
  };

  before(async () => {
    const created = await ctx.testStore.create();
    drop = created.drop;
    env = { DATABASE_URL: databaseUrl(created.location) };
    folder = mkdtempSync(join(tmpdir(), 'catalogue-price-list-'));
    // Every instance over one PostgreSQL database must see the change; SQLite serves one file from one.
    servers = [await startServer(created.location)];
    if (created.location.kind === 'postgres') servers.push(await startServer(created.location));
    for (const [name, price] of [['Espresso 1 kg', '12.99'], ['Nutella 400 g', '3.49'], ['Oat milk 1 l', '2.49']] as const) {
      catalogue.push(await createProduct(servers[0]!.url, { name, price }));
    }
  });
  after(async () => {
    for (const server of servers) await server.stop();
    rmSync(folder, { recursive: true, force: true });
    await drop?.();
  });

  it('changes names and prices, adds new products in file order, keeps every pk, and every server answers anew', async () => {
    const [espresso, nutella, oatMilk] = catalogue as [Product, Product, Product];
    // Twice, so that whatever a server keeps between requests is in place before the import.
    await observe(servers[0]!.url, espresso.pk);
    const before = await Promise.all(servers.map((server) => observe(server.url, espresso.pk)));

    const [tea, honey] = [uniqueBarcode(), uniqueBarcode()];
    const file = fileOf('prices.csv', csv([
      { name: 'Green tea, 40 bags', barcode: tea, price: '4.10' },
      { ...espresso, price: '13.49' },
      nutella,
      { ...oatMilk, name: 'Oat drink 1 l' },
      { name: 'Honey 350 g', barcode: honey, price: '7.80' },
    ]));
    const result = await runCli('import', ['--update', file], env);
    assert.deepEqual(result, { code: 0, stdout: '', stderr: `Updated the catalogue from ${file}: 2 added, 2 changed, 1 unchanged.\n` });

    catalogue = [
      { ...espresso, price: '13.49' },
      nutella,
      { ...oatMilk, name: 'Oat drink 1 l' },
      { pk: 4, name: 'Green tea, 40 bags', barcode: tea, price: '4.10' },
      { pk: 5, name: 'Honey 350 g', barcode: honey, price: '7.80' },
    ];
    await expectEverywhere(catalogue, espresso.pk);
    for (const [i, server] of servers.entries()) {
      const after = await observe(server.url, espresso.pk);
      assert.notEqual(after.detail.etag, before[i]!.detail.etag);
      assert.notEqual(after.page.etag, before[i]!.page.etag);
      if (before[i]!.list.etag !== undefined) assert.notEqual(after.list.etag, before[i]!.list.etag);
      // A client holding the old tag gets the new product, not a 304.
      const revalidated = await send(`${server.url}/api/v1/shop/product/${espresso.pk}`, { headers: { 'If-None-Match': before[i]!.detail.etag! } });
      assert.equal(revalidated.status, 200);
      assert.deepEqual(revalidated.json, catalogue[0]);
    }

    // The listed products drew no pk: the next product created takes the very next one, on every database.
    const next = await createProduct(servers.at(-1)!.url, { name: 'Sea salt 250 g', price: '1.20' });
    assert.equal(next.pk, 6);
    catalogue.push(next);
    await expectEverywhere(catalogue, next.pk);
  });

  it('changes nothing, not even an ETag, when the list matches the catalogue', async () => {
    const tags = await Promise.all(servers.map((server) => observe(server.url, 1)));
    const result = await runCli('import', ['--update', fileOf('same.csv', csv(catalogue))], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /: 0 added, 0 changed, 6 unchanged\.\n$/);
    for (const [i, server] of servers.entries()) {
      const detail = await send(`${server.url}/api/v1/shop/product/1`, { headers: { 'If-None-Match': tags[i]!.detail.etag! } });
      const page = await send(`${server.url}/api/v2/shop/products?limit=3&offset=1`, { headers: { 'If-None-Match': tags[i]!.page.etag! } });
      assert.deepEqual([detail.status, page.status], [304, 304]);
    }
  });

  it('applies nothing when a row is bad, and only the good rows with --skip-invalid', async () => {
    const espresso = catalogue[0]!;
    const file = fileOf('bad.csv', csv([{ ...espresso, price: '14.99' }, { name: 'Twice', barcode: espresso.barcode, price: '1.00' }], ['Pen,4006381333932,1.00']));
    const refused = await runCli('import', ['--update', file], env);
    assert.deepEqual(refused, {
      code: 1,
      stdout: '',
      stderr: [
        `line 3: barcode: ${espresso.barcode} is also on line 2.`,
        'line 4: barcode: EAN-13 check digit is wrong: expected 1, got 2.',
        '2 rows are not valid; nothing was imported. Fix them, or pass --skip-invalid to import the valid rows only.',
        '',
      ].join('\n'),
    });
    await expectEverywhere(catalogue, espresso.pk);

    const skipping = await runCli('import', ['--update', '--skip-invalid', file], env);
    assert.equal(skipping.code, 0);
    assert.equal(skipping.stderr.split('\n').at(-2), `Updated the catalogue from ${file}: 0 added, 1 changed, 0 unchanged; skipped 2 invalid rows.`);
    catalogue[0] = { ...espresso, price: '14.99' };
    await expectEverywhere(catalogue, espresso.pk);
  });
});
