import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { connect } from 'node:net';
import { it, type TestContext } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { DatabaseLocation } from '../../src/config.js';
import { describeEachStore, type StoreTestContext } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { passesWithin } from '../helpers/passes-within.js';
import { insertLongNamedProducts } from '../helpers/many-products.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { startServer, type RunningServer, type ServerOptions } from '../helpers/server.js';
import { spyOnStore } from '../helpers/store-spy.js';

// The v1 list past the length kept whole is streamed in steps read from the database as the client
// takes them (src/http/list-stream.ts). These servers stream it from a few hundred products on, in short
// steps, so that a list of a few thousand spans many.

const STREAMED = { wholeList: { keptMaxProducts: 100, stepRows: 200 } } satisfies ServerOptions;

/** Names that are no UTF-8, as hex: a lone byte, a cut sequence, an encoded surrogate, past U+10FFFF, overlong. */
const BAD_UTF8_NAMES: ReadonlyArray<readonly [number, string]> = [
  [2, 'ff41c3'],
  [400, '41eda080'],
  [401, 'f4908080'],
  [2_999, 'c0af22'],
];

const AWKWARD_NAMES: ReadonlyArray<readonly [number, string]> = [
  [1, 'Quote " and backslash \\ and slash /'],
  [200, 'Tab\tnew line\ncarriage return\rcontrols \u0001\u001f\u007f'],
  [201, 'Ωmega café Straße 😀 日本'],
  [1_500, '</script> & <b>'],
  [3_000, 'Separators \u2028 \u2029 and \u00a0'],
];

// A bound for a hang, not for speed: beside CI's other lanes, two busy loops and a second test file, the
// restore suite took more than 120 s, as this one could.
describeEachStore('the whole v1 list, streamed', { env: false, timeout: 600_000 }, (ctx) => {
  it('is complete and the same bytes as the list kept whole, plain, gzip and br, read in steps', async (t) => {
    const location = await catalogueOf(ctx, t, 3_000);
    // Names whose JSON needs escapes, where steps meet and inside them: each step's text is written by
    // the database, the list kept whole by the serializer.
    for (const [pk, name] of AWKWARD_NAMES) await outsideSql(location, 'UPDATE product SET name = $1 WHERE pk = $2', [name, pk]);
    // SQLite keeps whatever bytes plain SQL gives a text column: a product read decodes bad ones to U+FFFD.
    if (location.kind === 'sqlite') for (const [pk, bytes] of BAD_UTF8_NAMES) await outsideSql(location, `UPDATE product SET name = CAST(X'${bytes}' AS TEXT) WHERE pk = ${pk}`);
    const whole = await serverOver(location, t, { inProcess: true });
    const streamed = await serverOver(location, t, STREAMED);
    const expected = await send(`${whole.url}/api/v1/shop/products`);
    assert.equal(expected.status, 200);
    assert.equal((expected.json as unknown[]).length, 3_000);
    for (const coding of [undefined, 'gzip', 'br'] as const) {
      const before = await listFigures(streamed);
      const answer = await send(`${streamed.url}/api/v1/shop/products`, { headers: coding === undefined ? {} : { 'Accept-Encoding': coding } });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-encoding'], coding);
      assert.equal(answer.headers.etag, undefined, 'a streamed list has no ETag');
      const body = coding === 'gzip' ? gunzipSync(answer.bytes) : coding === 'br' ? brotliDecompressSync(answer.bytes) : answer.bytes;
      assert.ok(body.equals(expected.bytes), `${coding ?? 'plain'}: ${body.length} bytes, ${expected.bytes.length} expected`);
      const after = await listFigures(streamed);
      // 3,000 rows in steps of 200: 15 full steps and the empty one that ends the list.
      assert.equal(after.stepsRead - before.stepsRead, 16, coding);
      assert.equal(after.open, 0);
    }
    // `If-None-Match: *` matches the list there is, as it does a list kept whole, and reads no further.
    for (const server of [whole, streamed]) {
      const unchanged = await send(`${server.url}/api/v1/shop/products`, { headers: { 'If-None-Match': '*' } });
      assert.equal(unchanged.status, 304);
      assert.equal(unchanged.bytes.length, 0);
    }
    assert.equal((await listFigures(streamed)).open, 0);
    // The change feed, whose pages the database writes as the list's steps, says the same of each product.
    const feed = await send(`${streamed.url}/api/v2/shop/changes?since=0&limit=10000`);
    assert.equal(feed.status, 200);
    assert.ok(isUtf8(feed.bytes), 'the feed is UTF-8');
    // In the order of their last change: the products renamed above come last.
    const products = (feed.json as { changes: Array<{ product: { pk: number } }> }).changes.map((change) => change.product).sort((a, b) => a.pk - b.pk);
    assert.deepEqual(products, expected.json);
  });

  it('reads no further than its client takes it, and a detail read is answered while it waits', async (t) => {
    // Some 20 MB of list, 300 steps of 66 KB: far more than the sockets of a client that reads nothing
    // take in (on loopback the sender's buffer grows to 4 MB, tcp_wmem's default maximum).
    const location = await catalogueOf(ctx, t, 60_000);
    const server = await serverOver(location, t, STREAMED);
    const before = await listFigures(server);
    const { hostname, port } = new URL(server.url);
    // A client that asks for the list and then reads nothing: no 'data' listener, so its socket stops
    // taking bytes once its own buffer is full.
    const socket = connect(Number(port), hostname);
    // Closed before the server stops, which would wait for the list.
    try {
      socket.write(`GET /api/v1/shop/products HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
      // Until the sockets are full: the list waits for its client.
      let figures = await listFigures(server);
      await passesWithin(60_000, async () => {
        figures = await listFigures(server);
        assert.equal(figures.waiting, 1, 'the list waits for its client');
      }, 20);
      const waitingAt = figures.stepsRead;
      const detail = await send(`${server.url}/api/v1/shop/product/1`);
      assert.equal(detail.status, 200);
      assert.equal((detail.json as { pk: number }).pk, 1);
      // Answered meanwhile, and the list read no step for the client that took none: still waiting where it was.
      figures = await listFigures(server);
      assert.deepEqual({ open: figures.open, waiting: figures.waiting, stepsRead: figures.stepsRead }, { open: 1, waiting: 1, stepsRead: waitingAt });
      assert.ok(waitingAt - before.stepsRead < 301, `the whole list (301 steps) was read for a client that took none`);
      // A client gone ends its list.
      socket.destroy();
      await passesWithin(60_000, async () => {
        figures = await listFigures(server);
        assert.deepEqual({ open: figures.open, waiting: figures.waiting }, { open: 0, waiting: 0 });
      }, 20);
    } finally {
      socket.destroy();
    }
  });

  it('counts no list as waiting once its client has left, even one that left while a step was read', async (t) => {
    const location = await catalogueOf(ctx, t, 5_000);
    const server = await serverOver(location, t, STREAMED);
    const { hostname, port } = new URL(server.url);
    // Clients that take the list's first bytes and leave while it is still being read, step after step.
    await Promise.all(Array.from({ length: 8 }, () => new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      socket.on('error', reject);
      socket.once('data', () => {
        socket.destroy();
        resolve();
      });
      socket.write(`GET /api/v1/shop/products HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
    })));
    await passesWithin(60_000, async () => {
      const figures = await listFigures(server);
      assert.deepEqual({ open: figures.open, waiting: figures.waiting }, { open: 0, waiting: 0 });
    }, 20);
  });
  it('reads a step or two for a client that asks and leaves at once, plain, gzip or br, and the whole list for one that only ends its side', async (t) => {
    // Some 6.6 MB of list, 100 steps of 66 KB: brotli takes in some 700 KB before it gives out a byte of its own.
    const location = await catalogueOf(ctx, t, 20_000);
    const server = await serverOver(location, t, STREAMED);
    const { hostname, port } = new URL(server.url);
    const request = (coding: string | undefined): string =>
      `GET /api/v1/shop/products HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${coding === undefined ? '' : `Accept-Encoding: ${coding}\r\n`}\r\n`;
    for (const coding of [undefined, 'gzip', 'br'] as const) {
      const before = await listFigures(server);
      // Asks and closes its socket: its system answers the list's first bytes with a reset, and the list
      // finds out at its next write. To a client that ended its side, a compressed list writes each step
      // as it is read, as a plain one does: held in the encoder, 700 KB were read for nobody, and a
      // thousand such clients at once held a thousand encoders for as long (2 GB).
      const socket = connect(Number(port), hostname, () => socket.end(request(coding), () => socket.destroy()));
      socket.on('error', () => undefined);
      let read = 0;
      await passesWithin(60_000, async () => {
        const figures = await listFigures(server);
        read = figures.stepsRead - before.stepsRead;
        assert.ok(read > 0 && figures.open === 0, 'the list was opened and then closed');
      }, 20);
      // 4 here on either database, in every coding; held in the encoder, 14 and more.
      assert.ok(read <= 8, `${coding ?? 'plain'}: ${read} steps of 101 read for a client that left at once`);
    }
    // A client that ends its side right after asking, as `nc -N` does, and reads: the whole list.
    const expected = await send(`${server.url}/api/v1/shop/products`);
    for (const coding of [undefined, 'gzip', 'br'] as const) {
      const answer = await new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const socket = connect(Number(port), hostname, () => socket.end(request(coding)));
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('error', reject);
        socket.on('end', () => resolve(Buffer.concat(chunks)));
      });
      const head = answer.subarray(0, answer.indexOf('\r\n\r\n')).toString('latin1');
      assert.match(head, /^HTTP\/1\.1 200 /, coding);
      const body = unchunk(answer.subarray(head.length + 4));
      const plain = coding === 'gzip' ? gunzipSync(body) : coding === 'br' ? brotliDecompressSync(body) : body;
      assert.ok(plain.equals(expected.bytes), `${coding ?? 'plain'}: ${plain.length} bytes, ${expected.bytes.length} expected`);
    }
  });
  it('closes the lists pipelined behind another on a connection its client closed, in every coding', async (t) => {
    // 6.6 MB of list: more than a list queued behind another takes in before it waits.
    const location = await catalogueOf(ctx, t, 20_000);
    const server = await serverOver(location, t, STREAMED);
    const { hostname, port } = new URL(server.url);
    const PIPELINED = 5;
    for (const coding of [undefined, 'gzip', 'br'] as const) {
      const before = await listFigures(server);
      const request = `GET /api/v1/shop/products HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${coding === undefined ? '' : `Accept-Encoding: ${coding}\r\n`}\r\n`;
      // Five lists asked at once on one connection, which is then closed. Node never tells the answers
      // still queued behind the first that it closed: they read on and stayed open for good.
      const socket = connect(Number(port), hostname, () => socket.end(request.repeat(PIPELINED), () => socket.destroy()));
      socket.on('error', () => undefined);
      await passesWithin(60_000, async () => {
        const figures = await listFigures(server);
        assert.ok(figures.stepsRead - before.stepsRead >= PIPELINED, 'every list was asked for');
        assert.equal(figures.open, 0, `${coding ?? 'plain'}: lists still open for a client gone`);
      }, 20);
    }
  });
  it('sends the head and the first step of a compressed list before it reads the next', async (t) => {
    const location = await catalogueOf(ctx, t, 3_000);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    t.after(() => release());
    // Every step but the first waits until the test lets it: what the client has by then came from the first.
    const server = await serverOver(location, t, {
      ...STREAMED,
      wrapStore: (store) => spyOnStore(store, 'listProductsJsonAfter', ([after], call) => ((after as number) > 0 ? held.then(call) : call())),
    });
    const { hostname, port } = new URL(server.url);
    for (const coding of ['gzip', 'br'] as const) {
      const socket = connect(Number(port), hostname, () => socket.write(`GET /api/v1/shop/products HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept-Encoding: ${coding}\r\nConnection: close\r\n\r\n`));
      t.after(() => socket.destroy());
      const chunks: Buffer[] = [];
      // A step of 200 products is some 66 KB of JSON, which brotli would keep whole before a byte of its own.
      const first = await new Promise<Buffer>((resolve, reject) => {
        socket.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          const answer = Buffer.concat(chunks);
          const bodyAt = answer.indexOf('\r\n\r\n');
          if (bodyAt >= 0 && answer.length > bodyAt + 4) resolve(answer);
        });
        socket.on('error', reject);
        // Bytes that come only once the held step is read never come: a bound for the hang, not for speed.
        setTimeout(() => reject(new Error(`${coding}: nothing of the list came while its second step was held`)), 60_000).unref();
      });
      assert.match(first.toString('latin1'), new RegExp(`^HTTP/1\\.1 200 [^]*content-encoding: ${coding}`, 'i'));
      socket.destroy();
    }
  });
});

/** A fresh database, brought up to date, holding `count` products. */
async function catalogueOf(ctx: StoreTestContext, t: TestContext, count: number): Promise<DatabaseLocation> {
  const database = await ctx.freshDatabase(t);
  await database.open();
  await insertLongNamedProducts(database.location, count);
  return database.location;
}

async function serverOver(location: DatabaseLocation, t: TestContext, options: ServerOptions): Promise<RunningServer> {
  const server = await startServer(location, {}, options);
  t.after(() => server.stop());
  return server;
}

interface ListFigures {
  readonly stepsRead: number;
  readonly open: number;
  readonly waiting: number;
}

async function listFigures(server: RunningServer): Promise<ListFigures> {
  const { text } = await send(`${server.url}/metrics`);
  const figure = (pattern: RegExp): number => Number(pattern.exec(text)?.[1]);
  return {
    stepsRead: figure(/^catalogue_list_steps_read_total (\d+)$/m),
    open: figure(/^catalogue_list_streams\{state="open"\} (\d+)$/m),
    waiting: figure(/^catalogue_list_streams\{state="waiting"\} (\d+)$/m),
  };
}

/** The body of a chunked answer (RFC 9112 §7.1), its chunks joined. */
function unchunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
