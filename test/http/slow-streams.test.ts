import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { it, type TestContext } from 'node:test';
import { databaseUrl, spawnServer } from '../helpers/child-server.js';
import { describeEachStore, type FreshDatabase } from '../helpers/each-store.js';
import { changesOf, openEventStream, type EventStreamClient } from '../helpers/event-stream.js';
import { send } from '../helpers/http.js';
import { insertLongNamedProducts } from '../helpers/many-products.js';
import { passesWithin } from '../helpers/passes-within.js';
import { createProduct } from '../helpers/products.js';
import { startServer } from '../helpers/server.js';
import { spyOnStore } from '../helpers/store-spy.js';

/**
 * Changes of some 330 bytes each: about 10 MB from version 0, more than the socket buffers between
 * the service and a client that reads nothing take (some 4 MB on Linux's defaults), so that the service
 * is left holding what it writes. A catch-up page of 1,000 of them is some 330 KB.
 */
const PRODUCTS = 30_000;
const PAGE_BYTES_AT_MOST = 400_000;

/** Linux's table of IPv4 TCP sockets: local and remote address, state, queues. */
const KERNEL_TCP_TABLE = '/proc/net/tcp';
const TCP_ESTABLISHED = '01';

/**
 * The state of the service's side (local port `servicePort`) of the connection to each client port, as
 * the kernel's table has it: `undefined` where it has none (the connection is gone).
 */
function serviceSideStates(servicePort: number, clientPorts: readonly number[]): Array<string | undefined> {
  return clientPorts.map((clientPort) => serviceSide(servicePort, clientPort)?.[3]);
}

/** The bytes the kernel holds unacknowledged on the service's side of the connection to `clientPort`: 0 where there is none. */
function serviceSideQueue(servicePort: number, clientPort: number): number {
  const queues = serviceSide(servicePort, clientPort)?.[4];
  return queues === undefined ? 0 : Number.parseInt(queues.split(':')[0]!, 16);
}

/** The kernel's row of the service's side of the connection to `clientPort`, split into its fields. */
function serviceSide(servicePort: number, clientPort: number): string[] | undefined {
  const hex = (port: number): string => port.toString(16).toUpperCase().padStart(4, '0');
  const rows = readFileSync(KERNEL_TCP_TABLE, 'utf8').split('\n').slice(1).map((line) => line.trim().split(/\s+/));
  return rows.find(([, local, remote]) => local?.endsWith(`:${hex(servicePort)}`) && remote?.endsWith(`:${hex(clientPort)}`));
}

/** A client on a socket of its own (its port known) that asks for the stream after `since` and reads nothing. */
async function silentStreamClient(port: string, since: number): Promise<Socket> {
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => undefined);
  socket.pause();
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`GET /api/v2/shop/changes?since=${since} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  return socket;
}

/** A figure of the service's /metrics (with workers, summed over them). */
async function metric(url: string, series: string): Promise<number> {
  const text = (await send(`${url}/metrics`)).text;
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  assert.ok(line !== undefined, `no ${series} in /metrics`);
  return Number(line.slice(series.length + 1));
}

/** Every change's version from 0, in order, as the feed's pages give them. */
async function allVersions(url: string): Promise<number[]> {
  const versions: number[] = [];
  for (let next: string | null = `${url}/api/v2/shop/changes?since=0&limit=10000`; next !== null; ) {
    const page = (await send(next)).json as { changes: Array<{ version: number }>; next: string | null };
    versions.push(...page.changes.map((change) => change.version));
    next = page.next;
  }
  return versions;
}

/**
 * Reads a stream opened paused, and as EventSource does, reconnects with Last-Event-ID whenever the
 * service has closed it, until the change of version `last` has come. Resolves with the versions of
 * the changes in the order they came, over every connection, and how often it reconnected.
 */
async function readUntil(url: string, first: EventStreamClient, last: number): Promise<{ versions: number[]; reconnections: number }> {
  const versions: number[] = [];
  let stream = first;
  stream.resume();
  // A connection closed before a whole event came resumes where the one before left off, as EventSource does.
  let lastEventId: string | undefined;
  for (let reconnections = 0; ; reconnections += 1) {
    await stream.waitFor((event) => event.event === 'change' && event.id === String(last), 60_000).catch(() => stream.ended);
    stream.close();
    versions.push(...changesOf(stream.events).map((change) => change.version));
    if (versions.at(-1) === last) return { versions, reconnections };
    assert.ok(reconnections < 20, `the stream was closed ${reconnections} times before version ${last}`);
    lastEventId = stream.lastEventId() ?? lastEventId;
    stream = await openEventStream(`${url}/api/v2/shop/changes`, lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId });
    assert.equal(stream.status, 200, stream.text());
  }
}

describeEachStore('change streams whose clients read nothing', { env: false, timeout: 240_000 }, (ctx) => {
  /** A fresh database, brought up to date, holding PRODUCTS products. */
  const catalogueOfLongNames = async (t: TestContext): Promise<FreshDatabase> => {
    const database = await ctx.freshDatabase(t);
    await database.open();
    await insertLongNamedProducts(database.location, PRODUCTS);
    return database;
  };

  it('hold at most the memory budget of the instance, all its workers together: past it the streams behind longest are closed, other requests are served, and each stream resumed with Last-Event-ID gets every change once, in order', async (t) => {
    const { location } = await catalogueOfLongNames(t);
    const budget = 2 ** 20;
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '2', CHANGE_STREAMS_MEMORY_MB: String(budget / 2 ** 20) });
    t.after(() => server.stop());
    // Six streams, three a worker, each of which comes to hold a page of some 330 KB: twice the budget.
    const streams: EventStreamClient[] = [];
    t.after(() => streams.forEach((stream) => stream.close()));
    for (let i = 0; i < 6; i++) streams.push(await openEventStream(`${server.url}/api/v2/shop/changes?since=0`, {}, { paused: true }));
    assert.deepEqual(streams.map((stream) => stream.status), streams.map(() => 200));

    await passesWithin(60_000, async () => assert.ok((await metric(server.url, 'catalogue_change_streams_dropped_total{reason="memory"}')) > 0, 'a stream was closed for the budget'), 50);
    // The keep-alive comment and the `retry` line go without room: a few bytes a stream past the budget.
    const held = await metric(server.url, 'catalogue_change_stream_bytes');
    assert.ok(held <= budget + 1024, `${held} bytes held past the budget`);
    const first = await send(`${server.url}/api/v1/shop/product/1`);
    assert.equal(first.status, 200);
    assert.deepEqual(first.json, { pk: 1, name: `${'Long name '.repeat(19)}1`, barcode: '2900000000001', price: '0.01' });
    const created = await createProduct(server.url, { name: 'Created beside the streams' });
    assert.deepEqual((await send(`${server.url}/api/v1/shop/product/${created.pk}`)).json, created);

    const expected = await allVersions(server.url);
    assert.equal(expected.length, PRODUCTS + 1);
    const read = await Promise.all(streams.map((stream) => readUntil(server.url, stream, expected.at(-1)!)));
    for (const { versions } of read) assert.deepEqual(versions, expected);
    assert.ok(read.some(({ reconnections }) => reconnections > 0), 'some stream was closed and resumed');
  });

  it('closes the live streams whose clients have been behind longest once they hold the budget, and each resumed gets every change once, in order', async (t) => {
    const database = await ctx.freshDatabase(t);
    await database.open();
    const budget = 2 ** 20;
    const server = await spawnServer({ DATABASE_URL: databaseUrl(database.location), WORKERS: '2', CHANGE_STREAMS_MEMORY_MB: String(budget / 2 ** 20) });
    t.after(() => server.stop());
    // Three live streams over an empty catalogue, whose clients then stop reading.
    const streams: EventStreamClient[] = [];
    t.after(() => streams.forEach((stream) => stream.close()));
    for (let i = 0; i < 3; i++) streams.push(await openEventStream(`${server.url}/api/v2/shop/changes`));
    for (const stream of streams) {
      await stream.waitFor((event) => event.event === 'caught-up');
      stream.pause();
    }
    // Some 6.6 MB of changes for each, in one transaction: more than its socket buffers take.
    await insertLongNamedProducts(database.location, PRODUCTS * (2 / 3));

    // Live events cannot wait for room: each page of them goes to every live stream, and then the
    // streams behind longest are closed until the rest fit.
    await passesWithin(60_000, async () => assert.ok((await metric(server.url, 'catalogue_change_streams_dropped_total{reason="memory"}')) > 0, 'a stream was closed for the budget'), 50);
    const expected = await allVersions(server.url);
    assert.equal(expected.length, PRODUCTS * (2 / 3));
    const read = await Promise.all(streams.map((stream) => readUntil(server.url, stream, expected.at(-1)!)));
    for (const { versions } of read) assert.deepEqual(versions, expected);
  });

  it('give back their places when their connection goes, also streams asked for behind another on it', async (t) => {
    const { location } = await catalogueOfLongNames(t);
    const server = await startServer(location, {}, { storeOptions: ctx.testStore.storeOptions });
    t.after(() => server.stop());
    const { hostname, port } = new URL(server.url);
    const request = `GET /api/v2/shop/changes HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`;
    // Three streams asked for at once on one connection: the second and third are queued behind the first.
    const socket = connect(Number(port), hostname, () => socket.write(request.repeat(3)));
    socket.on('error', () => undefined);
    await passesWithin(60_000, async () => assert.equal(await metric(server.url, 'catalogue_change_streams'), 3), 20);
    // Gone at once. Node tells the answers still queued nothing: they held their places among
    // CHANGE_STREAMS_MAX, and what they had read, until they were dropped as stalled 30 s later.
    socket.resetAndDestroy();
    await passesWithin(60_000, async () => {
      assert.equal(await metric(server.url, 'catalogue_change_streams'), 0);
      assert.equal(await metric(server.url, 'catalogue_change_stream_bytes'), 0);
    }, 20);
    assert.equal(await metric(server.url, 'catalogue_change_streams_dropped_total{reason="slow"}'), 0, 'closed as their connection went, not dropped as stalled');
  });

  it('reads the next page of a stream catching up only once its client has taken the last, and holds no more than that page for it', async (t) => {
    const { location } = await catalogueOfLongNames(t);
    let streamSocket: Socket | undefined;
    /** For each catch-up read (the live source reads after the catalogue's version), the bytes the stream's socket still held. */
    const heldAtReads: number[] = [];
    const server = await startServer(location, {}, {
      storeOptions: ctx.testStore.storeOptions,
      wrapStore: (store) =>
        spyOnStore(store, 'readChanges', ([since], call) => {
          if ((since as number) < PRODUCTS) heldAtReads.push(streamSocket?.writableLength ?? 0);
          return call();
        }),
    });
    t.after(() => server.stop());
    server.app.server.once('connection', (socket: Socket) => (streamSocket = socket));
    const stream = await openEventStream(`${server.url}/api/v2/shop/changes`, {}, { paused: true });
    t.after(() => stream.close());

    // The client reads nothing: once its socket buffers are full, the service holds one page for it.
    await passesWithin(60_000, async () => assert.ok((await metric(server.url, 'catalogue_change_stream_bytes')) > 0, 'the service holds some of the stream'), 20);
    const held = await metric(server.url, 'catalogue_change_stream_bytes');
    assert.ok(held <= PAGE_BYTES_AT_MOST, `${held} bytes held for one client`);

    stream.resume();
    await stream.waitFor((event) => event.event === 'caught-up', 60_000);
    assert.deepEqual(changesOf(stream.events).map((change) => change.version), Array.from({ length: PRODUCTS }, (_, i) => i + 1));
    // A page of 1,000 changes per read, each read when the socket had taken everything before it.
    assert.deepEqual(heldAtReads, Array.from({ length: PRODUCTS / 1000 }, () => 0));
  });

  it('resets the connection of a stream it closes for the budget, so that what the kernel holds for its client is freed at once', { skip: !existsSync(KERNEL_TCP_TABLE) && `no ${KERNEL_TCP_TABLE} to read` }, async (t) => {
    const { location } = await catalogueOfLongNames(t);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '1', CHANGE_STREAMS_MEMORY_MB: '1' });
    t.after(() => server.stop());
    const { port } = new URL(server.url);
    // Clients that read nothing, on sockets of their own, so that their ports are known.
    const sockets: Socket[] = [];
    t.after(() => sockets.forEach((socket) => socket.destroy()));
    for (let i = 0; i < 4; i++) sockets.push(await silentStreamClient(port, 0));
    await passesWithin(60_000, async () => assert.ok((await metric(server.url, 'catalogue_change_streams_dropped_total{reason="memory"}')) > 0, 'a stream was closed for the budget'), 50);
    // Closed with a plain end, the service's side of a connection whose client reads nothing stays in
    // the kernel (FIN-WAIT-1) with the megabytes it could not deliver, offering them for minutes; reset,
    // it is gone at once. The kernel's own table says which.
    await passesWithin(10_000, async () => {
      // Read in each pass: another stream may be closed for the budget meanwhile.
      const dropped = await metric(server.url, 'catalogue_change_streams_dropped_total{reason="memory"}');
      const states = serviceSideStates(Number(port), sockets.map((socket) => socket.localPort!));
      assert.equal(states.filter((state) => state === undefined).length, dropped, `the service's side of each connection: ${JSON.stringify(states)}`);
      assert.ok(states.every((state) => state === undefined || state === TCP_ESTABLISHED), JSON.stringify(states));
    }, 50);
  });

  it('stops at once and exits 0 while a client has not taken what its stream was sent: that stream is reset, its client resumes elsewhere', async (t) => {
    const { location } = await catalogueOfLongNames(t);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '1' });
    t.after(() => server.stop());
    const stream = await openEventStream(`${server.url}/api/v2/shop/changes?since=0`, {}, { paused: true });
    t.after(() => stream.close());
    // Once the kernel's buffers are full, the service holds bytes its client has not taken: a plain end
    // of the stream could not finish, and the stop would wait its whole time limit for it.
    await passesWithin(60_000, async () => assert.ok((await metric(server.url, 'catalogue_change_stream_bytes')) > 0, 'the service holds some of the stream'), 20);

    assert.deepEqual(await server.stop(), { code: 0, signal: null });
    assert.equal(server.logs.find((line) => line.msg?.includes('did not finish') === true), undefined);
  });

  it('resets every stream at a stop, so that nothing a client has not read is left in the kernel once the service is gone', { skip: !existsSync(KERNEL_TCP_TABLE) && `no ${KERNEL_TCP_TABLE} to read` }, async (t) => {
    const { location } = await catalogueOfLongNames(t);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '1' });
    t.after(() => server.stop());
    const { port } = new URL(server.url);
    // The last 1,000 changes, some 330 KB: less than the kernel's buffers take, so that the service holds
    // none of it, and it lies in the kernel unread.
    const socket = await silentStreamClient(port, PRODUCTS - 1000);
    t.after(() => socket.destroy());
    await passesWithin(60_000, async () => assert.ok(serviceSideQueue(Number(port), socket.localPort!) > 0, 'nothing unread in the kernel'), 20);

    assert.deepEqual(await server.stop(), { code: 0, signal: null });
    // Ended, the connection would stay in the kernel after the process (FIN-WAIT-1), offering what its client has not read.
    assert.deepEqual(serviceSideStates(Number(port), [socket.localPort!]), [undefined]);
  });
});
