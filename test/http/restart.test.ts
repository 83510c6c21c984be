import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { createProduct, listAll } from '../helpers/products.js';
import { startServer } from '../helpers/server.js';

describeEachStore('restart', { env: false }, (ctx) => {
  it('a restarted service on the same database still serves what was created before', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    const first = await startServer(location);
    const created = [await createProduct(first.url, { price: '19.99' }), await createProduct(first.url)];
    await first.stop();

    const second = await startServer(location);
    try {
      assert.deepEqual(await listAll(second.url), created);
      const next = await createProduct(second.url);
      assert.ok(next.pk > created[1]!.pk);
    } finally {
      await second.stop();
    }
  });
});
