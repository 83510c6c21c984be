import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PostgresChangeListener } from '../../src/storage/postgres/change-listener.js';
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
    // An operator sees it: lost once, and listening again.
    const metrics = (await send(`${service.url}/metrics`)).text;
    assert.match(metrics, /^catalogue_change_listener_lost_total 1$/m);
    assert.match(metrics, /^catalogue_change_listener_listening 1$/m);
  });
});

describe('the listening connection silent once opened', () => {
  it('is given up and opened again, not waited on until the kernel gives up', async (t) => {
    // A server that lets a client in (authentication done, ready for a query) and then answers nothing,
    // as a connection the network dropped right after it opened.
    const sockets: Socket[] = [];
    const server = createServer((socket) => {
      sockets.push(socket);
      socket.once('data', () => {
        const authenticationOk = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]);
        const readyForQuery = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);
        socket.write(Buffer.concat([authenticationOk, readyForQuery]));
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const listener = new PostgresChangeListener(`postgres://catalogue@127.0.0.1:${port}/catalogue`);
    t.after(async () => {
      await listener.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    assert.equal(listener.current(), undefined);
    // Given up some 7 s after it opened: ten times that bounds "never".
    await passesWithin(70_000, async () => assert.ok(sockets.length >= 2, 'the silent connection was never given up for a new one'), 100);
    assert.ok(sockets[0]!.destroyed || sockets[0]!.readableEnded, 'the silent connection was left open');
    assert.equal(listener.current(), undefined);
  });
});
