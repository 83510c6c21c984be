import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { databaseUrl, requestArrived, spawnServer } from '../helpers/child-server.js';
import { postJson, send, type RawResponse } from '../helpers/http.js';
import { passesWithin } from '../helpers/passes-within.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { startServer, type RunningServer, type ServerOptions } from '../helpers/server.js';
import { withClient } from '../helpers/outside-sql.js';
import { postgres } from '../helpers/stores.js';
import { postgresBehindProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { insertLongNamedProducts } from '../helpers/many-products.js';
import { openEventStream } from '../helpers/event-stream.js';

const UNAVAILABLE = {
  type: 'about:blank',
  title: 'Service Unavailable',
  status: 503,
  detail: 'The catalogue database is not reachable right now; try again shortly.',
};

/** Sends a request and measures how long its answer took. */
async function timed(request: () => Promise<RawResponse>): Promise<RawResponse & { ms: number }> {
  const started = performance.now();
  const res = await request();
  return { ...res, ms: performance.now() - started };
}

/** A fresh PostgreSQL database, a proxy in front of it, and the service connected through the proxy. */
async function startBehindProxy(env: Record<string, string> = {}, options: ServerOptions = {}): Promise<{ proxy: TcpProxy; server: RunningServer; direct: string; drop: () => Promise<void> }> {
  const { proxy, direct, proxied, drop } = await postgresBehindProxy();
  const server = await startServer({ kind: 'postgres', url: proxied }, env, options);
  return { proxy, server, direct, drop };
}

type Product = Awaited<ReturnType<typeof createProduct>>;

/** How many connections listen for the notices of the catalogue at `url` (each names its channel). */
async function listeners(url: string): Promise<number> {
  const { rows } = await withClient(url, (client) =>
    client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'catalogue listener catalogue_' || md5(current_schema())"),
  );
  return rows[0]!.n;
}

/**
 * Inside a describe: before its tests, a service behind a proxy over a fresh database, holding one
 * product; after them, everything stopped and dropped, whatever state the test left the proxy in.
 */
function serviceBehindProxy(env: Record<string, string> = {}): { proxy: TcpProxy; server: RunningServer; direct: string; espresso: Product } {
  const fixture = {} as { proxy: TcpProxy; server: RunningServer; direct: string; espresso: Product };
  let dropDatabase: () => Promise<void> = async () => undefined;
  before(async () => {
    ({ proxy: fixture.proxy, server: fixture.server, direct: fixture.direct, drop: dropDatabase } = await startBehindProxy(env));
    fixture.espresso = await createProduct(fixture.server.url, { name: 'Espresso 1 kg', price: '12.99' });
  });
  after(async () => {
    fixture.proxy?.thaw();
    await fixture.server?.stop();
    await fixture.proxy?.cut();
    await dropDatabase();
  });
  return fixture;
}

describe('PostgreSQL lost and back while the service runs', { skip: postgres.skip }, () => {
  const service = serviceBehindProxy();

  const requests: Array<[string, (url: string) => Promise<RawResponse>]> = [
    ['one product', (url) => send(`${url}/api/v1/shop/product/${service.espresso.pk}`)],
    ['the v1 list', (url) => send(`${url}/api/v1/shop/products`)],
    ['a v2 page', (url) => send(`${url}/api/v2/shop/products`)],
    ['a creation', (url) => postJson(`${url}/api/v1/shop/product/`, JSON.stringify({ name: 'Tea', barcode: uniqueBarcode(), price: '2.00' }))],
  ];

  it('answers normally before the cut', async () => {
    for (const [, request] of requests) assert.ok([200, 201].includes((await request(service.server.url)).status));
    assert.equal((await send(`${service.server.url}/readyz`)).status, 200);
  });

  it('answers 503 problem documents while the database is cut off, without waiting on it', async () => {
    await service.proxy.cut();
    for (const [name, request] of requests) {
      const res = await timed(() => request(service.server.url));
      assert.equal(res.status, 503, `${name}: ${res.text}`);
      // At the latest when opening a connection gives up (2 s); ten times that bounds a request left waiting.
      assert.ok(res.ms < 20_000, `${name} took ${Math.round(res.ms)} ms`);
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.equal(res.headers['retry-after'], '5');
      assert.deepEqual(res.json, UNAVAILABLE);
    }
    const ready = await timed(() => send(`${service.server.url}/readyz`));
    assert.deepEqual([ready.status, ready.json], [503, UNAVAILABLE]);
    assert.ok(ready.ms < 20_000);
    const alive = await send(`${service.server.url}/healthz`);
    assert.deepEqual([alive.status, alive.json], [200, { status: 'ok' }]);
  });

  it('answers HEAD with the status GET gets, on every route, while the database is cut off', async () => {
    const paths = [
      '/',
      '/healthz',
      '/readyz',
      '/metrics',
      '/openapi.json',
      '/docs/API.md',
      '/api/v1/shop/products',
      `/api/v1/shop/product/${service.espresso.pk}`,
      '/api/v2/shop/products',
    ];
    const statuses = async (method: string) =>
      Promise.all(paths.map(async (path) => `${path} ${(await send(`${service.server.url}${path}`, { method })).status}`));
    const head = await statuses('HEAD');
    assert.deepEqual(head, await statuses('GET'));
    assert.ok(head.includes('/api/v1/shop/products 503'));
  });

  it('serves again as soon as the database is back, without a restart', async () => {
    await service.proxy.open();
    assert.deepEqual((await send(`${service.server.url}/readyz`)).json, { status: 'ready' });
    const one = await send(`${service.server.url}/api/v1/shop/product/${service.espresso.pk}`);
    assert.deepEqual([one.status, one.json], [200, service.espresso]);
    const created = await createProduct(service.server.url, { name: 'After the outage' });
    const list = await send(`${service.server.url}/api/v1/shop/products`);
    assert.equal(list.status, 200);
    assert.deepEqual((list.json as Array<{ pk: number }>).at(-1), created);
  });
});

describe('PostgreSQL silent while the service runs', { skip: postgres.skip }, () => {
  const service = serviceBehindProxy();

  it('answers 503 within the query time limit, not never, while no packet gets through', async () => {
    service.proxy.freeze();
    const [one, page, ready] = await Promise.all([
      timed(() => send(`${service.server.url}/api/v1/shop/product/${service.espresso.pk}`)),
      timed(() => send(`${service.server.url}/api/v2/shop/products`)),
      timed(() => send(`${service.server.url}/readyz`)),
    ]);
    for (const res of [one, page, ready]) {
      assert.deepEqual([res.status, res.json], [503, UNAVAILABLE]);
      // The client gives up after 6 s; ten times that bounds an answer that never comes.
      assert.ok(res.ms < 60_000, `answered after ${Math.round(res.ms)} ms`);
    }
    assert.equal((await timed(() => send(`${service.server.url}/healthz`))).status, 200);
  });

  it('serves again once packets flow, without a restart', async () => {
    service.proxy.thaw();
    assert.deepEqual((await send(`${service.server.url}/readyz`)).json, { status: 'ready' });
    assert.deepEqual((await send(`${service.server.url}/api/v1/shop/product/${service.espresso.pk}`)).json, service.espresso);
  });
});

describe('PostgreSQL silent while whole lists stream', { skip: postgres.skip }, () => {
  it('cuts every list waiting for its next step after the query time limit, not each after the ones before it, and streams again once packets flow', { timeout: 300_000 }, async (t) => {
    // Streamed from a hundred products on, in steps of 200 rows, as whole-list-stream.test.ts does.
    const { proxy, server, direct, drop } = await startBehindProxy({}, { wholeList: { keptMaxProducts: 100, stepRows: 200 } });
    t.after(async () => {
      proxy.thaw();
      await server.stop();
      await proxy.cut();
      await drop();
    });
    // 20,000 products of some 330 bytes: a streamed list of 100 steps, read by twenty clients at once.
    await insertLongNamedProducts({ kind: 'postgres', url: direct }, 20_000);
    const LISTS = 20;
    const lists = Array.from({ length: LISTS }, () => readToEnd(server.url, '/api/v1/shop/products'));
    await passesWithin(60_000, async () => assert.equal(await openLists(server.url), LISTS), 5);

    proxy.freeze();
    const frozenAt = performance.now();
    const ends = await Promise.all(lists.map(async (list) => ({ ...(await list), afterMs: performance.now() - frozenAt })));
    for (const end of ends) {
      assert.match(end.head, /^HTTP\/1\.1 200 /);
      assert.equal(end.complete, false, 'a list cut short never ends as if complete');
    }
    // One step hangs until pg gives up on it (6 s); the steps waiting behind it give up on their own
    // deadline, on timers, not CPU: all twenty lists were cut 6.06 s after the freeze. Taken one after
    // another, each once the one before had waited for a connection (2 s), the twelfth list was cut
    // after 49 s, and the last ones by the socket's idle limit at 60 s. The bound is the limit and four
    // times as much again.
    const last = Math.max(...ends.map((end) => end.afterMs));
    assert.ok(last < 30_000, `the last list was cut ${Math.round(last)} ms after the database fell silent`);
    assert.equal(await openLists(server.url), 0);

    proxy.thaw();
    const again = await readToEnd(server.url, '/api/v1/shop/products');
    assert.equal(again.complete, true);
  });
});

describe('PostgreSQL reached by a new path after the old one went silent', { skip: postgres.skip }, () => {
  // One connection, so that the request after the outage can only be served by replacing it.
  const service = serviceBehindProxy({ DB_POOL_MAX: '1' });

  it('drops the connection that timed out and serves the next request on a new one', async () => {
    service.proxy.freeze();
    assert.equal((await send(`${service.server.url}/api/v1/shop/product/${service.espresso.pk}`)).status, 503);
    service.proxy.reroute();
    // Served, not a 503: the one connection of the pool is a new one (the silent one would time out again).
    const res = await send(`${service.server.url}/api/v1/shop/product/${service.espresso.pk}`);
    assert.deepEqual([res.status, res.json], [200, service.espresso]);
  });

  it('finds its listening connection silent, and serves a change made meanwhile, not the answer kept before', async () => {
    service.proxy.thaw();
    const url = `${service.server.url}/api/v1/shop/product/${service.espresso.pk}`;
    // Kept, with the database's notices heard on the listening connection (through the proxy), which
    // the first read opens.
    assert.deepEqual((await send(url)).json, service.espresso);
    await passesWithin(10_000, async () => assert.equal(await listeners(service.direct), 1, 'the service does not listen yet'), 50);
    assert.deepEqual((await send(url)).json, service.espresso);
    assert.deepEqual((await send(url)).json, service.espresso);

    // Every connection open so far goes silent for good; new ones get through.
    service.proxy.freeze();
    service.proxy.reroute();
    await withClient(service.direct, (client) => client.query(`UPDATE product SET price_cents = 1599 WHERE pk = ${service.espresso.pk}`));
    // The listening connection is asked to answer every few seconds: ten times that bounds "never".
    await passesWithin(100_000, async () => {
      const res = await send(url);
      assert.deepEqual([res.status, res.json], [200, { ...service.espresso, price: '15.99' }], 'the answer kept before the change is still served');
    }, 100);
  });
});

describe('PostgreSQL refusing new connections while the service runs', { skip: postgres.skip }, () => {
  it('answers 503 with Retry-After, not 500, and serves again once the database takes connections', async (t) => {
    // A database of its own: closing one to connections would shut out every other test's schemas.
    const admin = new URL(process.env.TEST_DATABASE_URL!);
    const name = `catalogue_refusing_${process.pid}`;
    const adminSql = (text: string): Promise<unknown> => withClient(admin.toString(), (client) => client.query(text));
    await adminSql(`create database ${name}`);
    t.after(() => adminSql(`drop database if exists ${name} with (force)`));
    const url = new URL(admin);
    url.pathname = `/${name}`;
    const server = await startServer({ kind: 'postgres', url: url.toString() });
    t.after(() => server.stop());
    const espresso = await createProduct(server.url, { name: 'Espresso 1 kg' });

    await adminSql(`alter database ${name} allow_connections false`);
    t.after(() => adminSql(`alter database ${name} allow_connections true`).catch(() => undefined));
    await adminSql(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}' and pid <> pg_backend_pid()`);
    for (const path of [`/api/v1/shop/product/${espresso.pk + 1}`, '/api/v2/shop/products?offset=1', '/readyz']) {
      const res = await send(`${server.url}${path}`);
      assert.equal(res.status, 503, `${path}: ${res.text}`);
      assert.equal(res.headers['retry-after'], '5', path);
      assert.deepEqual(res.json, UNAVAILABLE, path);
    }

    await adminSql(`alter database ${name} allow_connections true`);
    assert.equal((await send(`${server.url}/api/v2/shop/products?offset=1`)).status, 200);
    assert.equal((await send(`${server.url}/readyz`)).status, 200);
  });
});

describe('PostgreSQL table locked by another connection while the service runs', { skip: postgres.skip }, () => {
  it('answers a read that waited past WRITE_WAIT_MS with a 503 that speaks of the lock, and a write with one that says nothing changed', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    const server = await startServer(location, { WRITE_WAIT_MS: '200', CHANGE_STREAMS_MAX: '2' });
    t.after(() => server.stop());
    // With workers, the primary asks each of them whether it is ready: the lock's kind crosses the processes.
    const workers = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '2', WRITE_WAIT_MS: '200' });
    t.after(() => workers.stop());
    const espresso = await createProduct(server.url, { name: 'Espresso 1 kg' });
    const tea = { name: 'Tea 100 g', barcode: uniqueBarcode(), price: '3.10' };
    await withClient(location.url, async (holder) => {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE product IN ACCESS EXCLUSIVE MODE');
      // Not ready: no product can be read. But the database answers, and the detail says what holds it.
      for (const url of [server.url, workers.url]) {
        const ready = await send(`${url}/readyz`);
        assert.equal(ready.status, 503, ready.text);
        assert.equal((ready.json as { detail: string }).detail, 'The catalogue is locked by another connection for longer than the service waits. Try again in a moment.', url);
      }
      // Not read before: no answer kept in memory stands in for the database's.
      const read = await send(`${server.url}/api/v1/shop/product/${espresso.pk}`);
      assert.equal(read.status, 503, read.text);
      assert.equal(read.headers['retry-after'], '1');
      assert.equal((read.json as { detail: string }).detail, 'The catalogue is locked by another connection for longer than the service waits. Try again in a moment.');
      // A change stream too: the same 503 before it starts, not a stream that opens and then breaks.
      for (const headers of [{ Accept: 'text/event-stream' }, { Accept: 'text/event-stream', 'Last-Event-ID': '1' }] as Array<Record<string, string>>) {
        const stream = await send(`${server.url}/api/v2/shop/changes`, { headers });
        assert.equal(stream.status, 503, stream.text);
        assert.equal(stream.headers['retry-after'], '1');
        assert.equal((stream.json as { detail: string }).detail, 'The catalogue is locked by another connection for longer than the service waits. Try again in a moment.');
      }
      const write = await postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify(tea));
      assert.equal(write.status, 503, write.text);
      assert.equal((write.json as { detail: string }).detail, 'The catalogue is busy with another write; nothing was changed. Try again in a moment.');
      await holder.query('COMMIT');
    });
    assert.deepEqual((await send(`${server.url}/api/v1/shop/product/${espresso.pk}`)).json, espresso);
    assert.equal((await send(`${workers.url}/readyz`)).status, 200);
    const list = await send(`${server.url}/api/v1/shop/products`);
    assert.deepEqual(list.json, [espresso], 'the refused create stored nothing');
    // The refused streams gave their room back: both of CHANGE_STREAMS_MAX are there to take.
    const streams = await Promise.all([openEventStream(`${server.url}/api/v2/shop/changes`), openEventStream(`${server.url}/api/v2/shop/changes`)]);
    for (const stream of streams) stream.close();
    assert.deepEqual(streams.map((stream) => stream.status), [200, 200]);
  });
});

describe('PostgreSQL silent when the service is stopped', { skip: postgres.skip }, () => {
  it('exits 0 once every request is answered, without waiting for the silent database to let go of its connections', async (t) => {
    const { proxy, proxied, drop } = await postgresBehindProxy();
    t.after(drop);
    t.after(async () => {
      proxy.thaw();
      await proxy.cut();
    });
    const server = await spawnServer({ DATABASE_URL: databaseUrl({ kind: 'postgres', url: proxied }), WORKERS: '1', LOG_LEVEL: 'debug' });
    t.after(() => server.process.kill('SIGKILL'));
    // A service just started may still call itself overloaded for a moment on a busy machine.
    await passesWithin(5_000, async () => void (await createProduct(server.url, { name: 'Espresso 1 kg' })), 100);
    // Several connections open before the database falls silent: those idle then are the ones the
    // stop's closing of the pool waits for, as the database never answers their goodbye.
    await Promise.all([2, 3, 4, 5].map((offset) => send(`${server.url}/api/v2/shop/products?limit=1&offset=${offset}`)));

    proxy.freeze();
    const read = send(`${server.url}/api/v2/shop/products?limit=1&offset=1`);
    const create = postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify({ name: 'Tea 100 g', barcode: uniqueBarcode(), price: '3.10' }));
    await server.waitForLog(requestArrived('GET'));
    await server.waitForLog(requestArrived('POST'));
    server.process.kill('SIGTERM');
    assert.deepEqual([(await read).status, (await create).status], [503, 503]);
    // Status 0: it did not wait out the stop's time limit (10 s, then status 1) for the silent database.
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
  });
});


/** How many streamed v1 lists the service has open, as /metrics says. */
async function openLists(url: string): Promise<number> {
  const { text } = await send(`${url}/metrics`);
  return Number(/^catalogue_list_streams\{state="open"\} (\d+)$/m.exec(text)?.[1]);
}

/**
 * Asks for `path` on a connection of its own and reads until the service closes it: the answer's head,
 * and whether a chunked body ended with its last chunk (complete) or was cut.
 */
function readToEnd(url: string, path: string): Promise<{ head: string; complete: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`));
    let head = '';
    let tail = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      if (head === '') head = chunk.subarray(0, 64).toString('latin1');
      tail = Buffer.concat([tail, chunk]).subarray(-7);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => (head === '' ? reject(new Error('closed before any answer')) : resolve({ head, complete: tail.toString('latin1').endsWith('\r\n0\r\n\r\n') })));
  });
}
