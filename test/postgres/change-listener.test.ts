import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { postgres } from '../helpers/stores.js';
import type { DatabaseLocation } from '../../src/config.js';

describe('the listening connection terminated by the database', { skip: postgres.skip }, () => {
  let service: ChildServer;
  let location: DatabaseLocation & { kind: 'postgres' };
  let dropDatabase: () => Promise<void> = async () => undefined;

  before(async () => {
    const created = await postgres.create();
    dropDatabase = created.drop;
    if (created.location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    location = created.location;
    service = await spawnServer({ DATABASE_URL: location.url, DB_POOL_MAX: '3' });
  });

  after(async () => {
    await service.stop();
    await dropDatabase();
  });

  /** The pids of this database's listener: its application_name names the schema's own channel. */
  const listenerPids = async (): Promise<number[]> => {
    const rows = await outsideSql<{ pid: number }>(
      location,
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'catalogue listener catalogue_' || md5(current_schema())",
    );
    return rows.map((row) => row.pid);
  };

  it('serves no stale answer, listens again, and the process stays up', async () => {
    const product = await createProduct(service.url, { price: '1.00' });
    const url = `${service.url}/api/v1/shop/product/${product.pk}`;
    await send(url);
    let pids: number[] = [];
    await passesWithin(5_000, async () => {
      pids = await listenerPids();
      assert.equal(pids.length, 1);
    });
    assert.deepEqual((await send(url)).json, product);

    const terminated = await outsideSql(location, 'SELECT pg_terminate_backend($1::int) AS done', [pids[0]!]);
    assert.deepEqual(terminated, [{ done: true }]);
    await outsideSql(location, `UPDATE product SET price_cents = 200 WHERE pk = ${product.pk}`);
    // Fresh as soon as the service sees its listener gone (then it asks the database) or hears again.
    await passesWithin(10_000, async () => assert.deepEqual((await send(url)).json, { ...product, price: '2.00' }));

    // Back within the reconnect's back-off, on a new backend.
    await passesWithin(5_000, async () => {
      const now = await listenerPids();
      assert.equal(now.length, 1);
      assert.notEqual(now[0], pids[0]);
    });
    await outsideSql(location, `UPDATE product SET price_cents = 300 WHERE pk = ${product.pk}`);
    await passesWithin(10_000, async () => assert.deepEqual((await send(url)).json, { ...product, price: '3.00' }));
    assert.equal((await send(`${service.url}/readyz`)).status, 200);
  });
});
