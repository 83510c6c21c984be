import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';
import { passesWithin } from '../helpers/passes-within.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { postgres } from '../helpers/stores.js';

describe('cached pages and ETags across two instances over one PostgreSQL database', { skip: postgres.skip }, () => {
  let instances: RunningServer[] = [];
  let dropDatabase: () => Promise<void> = async () => undefined;

  before(async () => {
    const { location, drop } = await postgres.create();
    dropDatabase = drop;
    instances = [await startServer(location), await startServer(location)];
  });

  after(async () => {
    for (const instance of instances) await instance.stop();
    await dropDatabase();
  });

  it('changes a page and its tag in one instance once the database tells it of a write through the other', async () => {
    const [a, b] = instances as [RunningServer, RunningServer];
    await createProduct(a.url);
    const url = `${a.url}/api/v2/shop/products?limit=10`;
    const first = await send(url);
    const etag = first.headers.etag!;
    assert.equal((await send(url, { headers: { 'If-None-Match': etag } })).status, 304);

    const created = await createProduct(b.url);
    // The other instance hears of the change by the database's notice (no query per request), which
    // comes milliseconds after the commit: ten seconds is a bound for a notice that never comes.
    await passesWithin(10_000, async () => {
      const after = await send(url, { headers: { 'If-None-Match': etag } });
      assert.equal(after.status, 200);
      assert.notEqual(after.headers.etag, etag);
      const page = after.json as { count: number; results: Array<{ barcode: string }> };
      assert.equal(page.count, (first.json as { count: number }).count + 1);
      assert.equal(page.results.at(-1)?.barcode, created.barcode);
    });
  });

  it('keeps the count exact under creates through both instances at once', async () => {
    const [a, b] = instances as [RunningServer, RunningServer];
    await Promise.all(Array.from({ length: 30 }, (_, i) => createProduct(i % 2 === 0 ? a.url : b.url)));
    const all = (await send(`${b.url}/api/v1/shop/products`)).json as unknown[];
    const page = (await send(`${a.url}/api/v2/shop/products?limit=1`)).json as { count: number };
    assert.equal(page.count, all.length);
  });
});
