import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProduct, listAll } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { STORES } from '../helpers/stores.js';

for (const store of STORES) {
  describe(`v1 list kept per revision (${store.name})`, { skip: store.skip }, () => {
    let server: RunningServer;
    before(async () => {
      server = await startFreshServer(store);
    });
    after(() => server.stop());

    it('answers the same list twice, and a new one after each write', async () => {
      const first = await createProduct(server.url);
      assert.deepEqual(await listAll(server.url), [first]);
      assert.deepEqual(await listAll(server.url), [first]);
      const second = await createProduct(server.url);
      assert.deepEqual(await listAll(server.url), [first, second]);
      assert.deepEqual(await listAll(server.url), [first, second]);
    });
  });
}
