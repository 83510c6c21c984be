import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { postJson, send } from '../helpers/http.js';
import { createProduct, listAll, uniqueBarcode } from '../helpers/products.js';
import { postgres } from '../helpers/stores.js';

describe('two service processes over one PostgreSQL database', { skip: postgres.skip }, () => {
  let instances: ChildServer[] = [];
  let dropDatabase: () => Promise<void> = async () => undefined;

  before(async () => {
    const { location, drop } = await postgres.create();
    dropDatabase = drop;
    if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    instances = await Promise.all([1, 2].map(() => spawnServer({ DATABASE_URL: location.url, DB_POOL_MAX: '5' })));
  });

  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await dropDatabase();
  });

  it('are both ready', async () => {
    for (const { url } of instances) {
      const res = await send(`${url}/readyz`);
      assert.deepEqual([res.status, res.json], [200, { status: 'ready' }]);
    }
  });

  it('read at once through one what was created through the other', async () => {
    const [a, b] = instances as [ChildServer, ChildServer];
    const created = await createProduct(a.url, { name: 'Filter coffee 500 g', price: '7.95' });
    const read = await send(`${b.url}/api/v1/shop/product/${created.pk}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.json, created);

    const back = await createProduct(b.url, { name: 'Green tea', price: '3.10' });
    assert.deepEqual((await send(`${a.url}/api/v1/shop/product/${back.pk}`)).json, back);
    assert.deepEqual(await listAll(a.url), await listAll(b.url));
  });

  it('let exactly one of 30 concurrent creations of one barcode succeed', async () => {
    const barcode = uniqueBarcode();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        postJson(`${instances[i % 2]!.url}/api/v1/shop/product/`, JSON.stringify({ name: `Attempt ${i}`, barcode, price: '1.00' })),
      ),
    );
    const statuses = answers.map((res) => res.status).sort();
    assert.deepEqual(statuses, [201, ...Array<number>(29).fill(409)]);
    for (const res of answers.filter((r) => r.status === 409)) {
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    }

    for (const { url } of instances) {
      const stored = (await listAll(url)).filter((product) => product.barcode === barcode);
      assert.equal(stored.length, 1);
      assert.deepEqual(stored[0], answers.find((res) => res.status === 201)!.json);
    }
  });
});
