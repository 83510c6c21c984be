import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { changesOf, openEventStream } from '../helpers/event-stream.js';
import { databaseUrl } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { send } from '../helpers/http.js';
import { insertLongNamedProducts } from '../helpers/many-products.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { startServer } from '../helpers/server.js';
import { spyOnStore } from '../helpers/store-spy.js';

interface ChangePage {
  catalogue_id: string;
  version: number;
  changes: Array<{ version: number; pk: number; product: { pk: number; name: string; barcode: string; price: string } | null }>;
  next: string | null;
}

describeEachStore('the change feed: GET /api/v2/shop/changes', (ctx) => {
  const feed = (query = '') => send(`${ctx.server.url}/api/v2/shop/changes${query}`);

  it('lists every product changed after a version, a page at a time, with the catalogue\'s version', async () => {
    const { version: start, catalogue_id } = (await feed()).json as ChangePage;
    const first = await createProduct(ctx.server.url, { name: 'Feed one', price: '1.00' });
    const second = await createProduct(ctx.server.url, { name: 'Feed two', price: '2.00' });
    const third = await createProduct(ctx.server.url, { name: 'Feed three', price: '3.00' });

    const page = await feed(`?since=${start}&limit=2&unknown=kept`);
    assert.equal(page.status, 200);
    assert.equal(page.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(page.json, {
      catalogue_id,
      version: start + 3,
      changes: [
        { version: start + 1, pk: first.pk, product: first },
        { version: start + 2, pk: second.pk, product: second },
      ],
      next: `${ctx.server.url}/api/v2/shop/changes?limit=2&since=${start + 2}&unknown=kept`,
    });
    assert.deepEqual((await feed(`?since=${start + 2}&limit=2&unknown=kept`)).json, {
      catalogue_id,
      version: start + 3,
      changes: [{ version: start + 3, pk: third.pk, product: third }],
      next: null,
    });
    // Up to date: nothing, and the version to ask from next time.
    assert.deepEqual((await feed(`?since=${start + 3}`)).json, { catalogue_id, version: start + 3, changes: [], next: null });
  });

  it('gives a removed product as null, and leaves it out of a whole copy (since 0)', async () => {
    const product = await createProduct(ctx.server.url, { name: 'Feed removed' });
    const { version: before, catalogue_id } = (await feed(`?limit=1`)).json as ChangePage;
    await outsideSql(ctx.server.location, `DELETE FROM product WHERE pk = ${product.pk}`);
    assert.deepEqual((await feed(`?since=${before}`)).json, { catalogue_id, version: before + 1, changes: [{ version: before + 1, pk: product.pk, product: null }], next: null });
    const whole = (await feed('?limit=10000')).json as ChangePage;
    assert.ok(!whole.changes.some((change) => change.pk === product.pk));
  });

  it('refuses a since ahead of the catalogue (another catalogue\'s copy) with 409', async () => {
    const { version } = (await feed()).json as ChangePage;
    const res = await feed(`?since=${version + 1}`);
    assert.equal(res.status, 409);
    assert.deepEqual(res.json, {
      type: 'about:blank',
      title: 'Conflict',
      status: 409,
      detail: `Version ${version + 1} is ahead of this catalogue's version ${version}: the copy does not come from this catalogue (a restored backup, another database). Start again from since=0.`,
      errors: { since: [`The catalogue's version is ${version}.`] },
    });
  });

  it('refuses bad parameters with a 400 naming each, and lowers a large limit', async () => {
    for (const [query, errors] of [
      ['?since=-1', { since: ['"-1" is not a whole number ≥ 0 in plain digits.'] }],
      ['?since=1e3&limit=0', { since: ['"1e3" is not a whole number ≥ 0 in plain digits.'], limit: ['limit must be 1 or more; got 0.'] }],
      ['?since=1&since=2', { since: ['Give since once; it was given 2 times.'] }],
      ['?since=99999999999999999999', { since: ['since must be at most 9007199254740991.'] }],
    ] as const) {
      const res = await feed(query);
      assert.equal(res.status, 400, query);
      assert.deepEqual((res.json as { errors: unknown }).errors, errors, query);
    }
    await createProduct(ctx.server.url);
    await createProduct(ctx.server.url);
    const many = (await feed('?limit=1')).json as ChangePage;
    assert.ok(many.next?.includes('limit=1'));
    const lowered = await feed('?limit=99999999999999999999999');
    assert.equal(lowered.status, 200);
    assert.ok((lowered.json as ChangePage).changes.length <= 10_000);
  });

  it('answers If-None-Match with 304 while nothing changed, HEAD with the same headers', async () => {
    const first = await feed('?limit=5');
    const etag = first.headers.etag!;
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
    assert.equal((await send(`${ctx.server.url}/api/v2/shop/changes?limit=5`, { headers: { 'If-None-Match': etag } })).status, 304);
    const head = await send(`${ctx.server.url}/api/v2/shop/changes?limit=5`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.etag, etag);
    await createProduct(ctx.server.url);
    const after = await send(`${ctx.server.url}/api/v2/shop/changes?limit=5`, { headers: { 'If-None-Match': etag } });
    // Still the first five changes, unless the new one is among them; the version has moved either way.
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.etag, etag);
  });
});

describeEachStore('the live change feed: text/event-stream', { env: { CHANGE_STREAMS_MAX: '3' } }, (ctx) => {
  const streamUrl = (query = '') => `${ctx.server.url}/api/v2/shop/changes${query}`;
  /** Resolves once the service counts `count` open streams (a client's close reaches it a moment later). */
  const streamsOpen = async (count: number): Promise<void> => {
    for (;;) {
      const metrics = await send(`${ctx.server.url}/metrics`);
      if (new RegExp(`^catalogue_change_streams ${count}$`, 'm').test(metrics.text)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it("answers HEAD asking for the stream with the stream's headers, no length and no stream", async () => {
    const stream = await openEventStream(streamUrl('?since=0'));
    let streamed: Record<string, unknown>;
    try {
      streamed = { ...stream.headers };
    } finally {
      stream.close();
    }
    await streamsOpen(0);
    const head = await send(streamUrl('?since=0'), { method: 'HEAD', headers: { Accept: 'text/event-stream' } });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-length'], undefined);
    const fields = (headers: Record<string, unknown>) => Object.keys(headers).filter((name) => !['date', 'x-request-id', 'transfer-encoding'].includes(name)).sort();
    assert.deepEqual(fields(head.headers), fields(streamed));
    for (const name of ['content-type', 'cache-control', 'x-accel-buffering', 'vary']) assert.equal(head.headers[name], streamed[name], name);
    await streamsOpen(0);
  });

  it('catches up, says caught-up, then sends each new change from any writer within a second', async () => {
    const existing = await createProduct(ctx.server.url, { name: 'Before the stream' });
    const stream = await openEventStream(streamUrl('?since=0'));
    try {
      assert.equal(stream.status, 200);
      assert.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8');
      assert.equal(stream.headers['cache-control'], 'no-store');
      const caughtUp = await stream.waitFor((event) => event.event === 'caught-up');
      const { version, catalogue_id } = JSON.parse(caughtUp.data!) as { version: number; catalogue_id: string };
      assert.equal(caughtUp.id, String(version));
      // First of all, the catalogue's identity, as every page carries it.
      assert.deepEqual(stream.events.filter((event) => event.retry === undefined)[0], { event: 'catalogue', data: JSON.stringify({ catalogue_id }) });
      assert.equal(((await send(streamUrl())).json as ChangePage).catalogue_id, catalogue_id);
      assert.ok(changesOf(stream.events).some((change) => change.pk === existing.pk));

      // A create through the API, then a change by plain SQL behind the service's back.
      const created = await createProduct(ctx.server.url, { name: 'While streaming', price: '4.00' });
      const viaApi = await stream.waitFor((event) => event.event === 'change' && JSON.parse(event.data!).pk === created.pk, 1_000);
      assert.deepEqual(JSON.parse(viaApi.data!), { version: version + 1, pk: created.pk, product: created });
      assert.equal(viaApi.id, String(version + 1));
      await outsideSql(ctx.server.location, `UPDATE product SET price_cents = 450 WHERE pk = ${created.pk}`);
      const viaSql = await stream.waitFor((event) => event.event === 'change' && JSON.parse(event.data!).version === version + 2, 1_000);
      assert.deepEqual(JSON.parse(viaSql.data!), { version: version + 2, pk: created.pk, product: { ...created, price: '4.50' } });
      await outsideSql(ctx.server.location, `DELETE FROM product WHERE pk = ${created.pk}`);
      const removal = await stream.waitFor((event) => event.event === 'change' && JSON.parse(event.data!).version === version + 3, 1_000);
      assert.deepEqual(JSON.parse(removal.data!), { version: version + 3, pk: created.pk, product: null });
      // Each version once, in order.
      const versions = changesOf(stream.events).map((change) => change.version);
      assert.deepEqual(versions, [...versions].sort((a, b) => a - b));
      assert.equal(new Set(versions).size, versions.length);
    } finally {
      stream.close();
    }
  });

  it('ends every stream when the catalogue gets a new identity, and tells the new one to a stream started then', async () => {
    await streamsOpen(0);
    const stream = await openEventStream(streamUrl('?since=0'));
    const caughtUp = await stream.waitFor((event) => event.event === 'caught-up');
    const { catalogue_id: before } = JSON.parse(caughtUp.data!) as { catalogue_id: string };
    const renewed = await runCli('new-identity', [], { DATABASE_URL: databaseUrl(ctx.server.location) });
    assert.equal(renewed.code, 0, renewed.stderr);
    const [, after] = /identity is now ([0-9a-f-]+):/.exec(renewed.stderr)!;
    assert.notEqual(after, before);
    await stream.ended;
    assert.deepEqual(stream.events.filter((event) => event.event === 'catalogue').map((event) => event.data), [JSON.stringify({ catalogue_id: before })]);
    assert.equal(((await send(streamUrl())).json as ChangePage).catalogue_id, after);
    const resumed = await openEventStream(streamUrl(), { 'Last-Event-ID': caughtUp.id! });
    try {
      assert.deepEqual(await resumed.waitFor((event) => event.event === 'catalogue'), { event: 'catalogue', data: JSON.stringify({ catalogue_id: after }) });
    } finally {
      resumed.close();
    }
  });

  it('resumes after Last-Event-ID, which wins over since', async () => {
    const first = await createProduct(ctx.server.url);
    const second = await createProduct(ctx.server.url);
    const { version } = (await send(streamUrl())).json as ChangePage;
    const stream = await openEventStream(streamUrl('?since=0'), { 'Last-Event-ID': String(version - 1) });
    try {
      await stream.waitFor((event) => event.event === 'caught-up');
      assert.deepEqual(
        changesOf(stream.events).map((change) => change.pk),
        [second.pk],
      );
      assert.ok(!changesOf(stream.events).some((change) => change.pk === first.pk));
    } finally {
      stream.close();
    }
  });

  it('streams only when the client prefers text/event-stream in Accept (any case, weight above 0, then specificity, then order), and says every answer varies by Accept', async () => {
    const cases: Array<[string, string]> = [
      ['text/event-stream', 'text/event-stream'],
      ['TEXT/Event-Stream', 'text/event-stream'],
      ['text/event-stream, application/json', 'text/event-stream'],
      ['text/event-stream;q=0', 'application/json'],
      ['text/event-stream;q=0, application/json', 'application/json'],
      ['application/json;q=1, text/event-stream;q=0.1', 'application/json'],
      ['*/*', 'application/json'],
      // Equal weights: the client's order decides; a named type beats a wildcard.
      ['application/json, text/event-stream', 'application/json'],
      ['*/*, text/event-stream', 'text/event-stream'],
      // The stream's own parameter, as its answer says it, in any case; a wildcard alone never names it.
      ['text/event-stream; charset=utf-8', 'text/event-stream'],
      ['text/event-stream;charset=UTF-8', 'text/event-stream'],
      ['application/json; charset=utf-8, text/event-stream;q=0.5', 'application/json'],
      ['text/*', 'application/json'],
      ['text/*, application/json;q=0.1', 'application/json'],
    ];
    for (const [accept, expected] of cases) {
      await streamsOpen(0);
      const answer = await openEventStream(streamUrl('?since=0'), { Accept: accept });
      assert.equal(answer.status, 200, accept);
      assert.equal(String(answer.headers['content-type']).split(';')[0], expected, accept);
      assert.match(String(answer.headers['vary']), /\bAccept\b/, accept);
      answer.close();
      await answer.ended;
    }
    await streamsOpen(0);
  });

  it('refuses a garbage Last-Event-ID with 400 and one ahead of the catalogue with 409', async () => {
    const garbage = await openEventStream(streamUrl(), { 'Last-Event-ID': 'abc' });
    assert.equal(garbage.status, 400);
    await garbage.ended;
    assert.deepEqual(JSON.parse(garbage.text()).errors, { 'Last-Event-ID': ['"abc" is not a whole number ≥ 0 in plain digits.'] });
    // Quoted as sent: full-width digits, in UTF-8 (Node's client sends a header's characters as bytes).
    const wide = await openEventStream(streamUrl(), { 'Last-Event-ID': Buffer.from('１２', 'utf8').toString('latin1') });
    assert.equal(wide.status, 400);
    await wide.ended;
    assert.deepEqual(JSON.parse(wide.text()).errors, { 'Last-Event-ID': ['"１２" is not a whole number ≥ 0 in plain digits.'] });
    // Last-Event-ID wins over since, but a since that is no version is refused all the same.
    const badSince = await openEventStream(streamUrl('?since=abc'), { 'Last-Event-ID': '0' });
    assert.equal(badSince.status, 400);
    await badSince.ended;
    assert.deepEqual(JSON.parse(badSince.text()).errors, { since: ['"abc" is not a whole number ≥ 0 in plain digits.'] });
    // Sent twice, it is refused as a parameter given twice is, not quoted as one joined value.
    const twice = await openEventStream(streamUrl(), { 'Last-Event-ID': ['1', '2'] });
    assert.equal(twice.status, 400);
    await twice.ended;
    assert.deepEqual(JSON.parse(twice.text()).errors, { 'Last-Event-ID': ['Give Last-Event-ID once; it was given 2 times.'] });
    const ahead = await openEventStream(streamUrl(), { 'Last-Event-ID': '999999999' });
    assert.equal(ahead.status, 409);
    // A refusal of the stream is no refusal of the page: caches must keep them apart.
    assert.match(String(ahead.headers['vary']), /\bAccept\b/);
    await ahead.ended;
    assert.deepEqual(Object.keys(JSON.parse(ahead.text()).errors), ['Last-Event-ID']);
    // The 409 names what the client sent: a stream started from since alone is told about since.
    const sinceAhead = await openEventStream(streamUrl('?since=999999999'));
    assert.equal(sinceAhead.status, 409);
    await sinceAhead.ended;
    assert.deepEqual(Object.keys(JSON.parse(sinceAhead.text()).errors), ['since']);
  });

  it('holds at most CHANGE_STREAMS_MAX streams, refusing more with 503 and Retry-After, and counts them in /metrics', async () => {
    await streamsOpen(0);
    const open = await Promise.all([1, 2, 3].map(() => openEventStream(streamUrl())));
    try {
      for (const stream of open) await stream.waitFor((event) => event.event === 'caught-up');
      const refused = await openEventStream(streamUrl());
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '1');
      await refused.ended;
      const metrics = await send(`${ctx.server.url}/metrics`);
      assert.match(metrics.text, /^catalogue_change_streams 3$/m);
    } finally {
      for (const stream of open) stream.close();
    }
    // A closed stream frees its place.
    await streamsOpen(0);
    const again = await openEventStream(streamUrl());
    assert.equal(again.status, 200);
    again.close();
  });

  it('disconnects a client that stops reading instead of buffering for it without end', async () => {
    await streamsOpen(0);
    const { version } = (await send(streamUrl())).json as ChangePage;
    // A client that sends its request and then reads nothing.
    const socket = connect(Number(new URL(ctx.server.url).port), '127.0.0.1');
    socket.write(`GET /api/v2/shop/changes?since=${version} HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n`);
    socket.pause();
    await streamsOpen(1);
    // Some twenty megabytes of changes in one statement.
    await insertLongNamedProducts(ctx.server.location, 60_000);
    // The service lets it go (a paused socket only hears of it once it reads again).
    await streamsOpen(0);
    socket.destroy();
    assert.equal((await send(`${ctx.server.url}/healthz`)).status, 200);
  });
});

describeEachStore('the live change feed: a burst of streams at once', { env: false }, (ctx) => {
  it('reads for the streams catching up one at a time, each page once for the streams at its version, and brings every stream every change', async (t) => {
    const STREAMS = 60;
    const PRODUCTS = 2_500; // three pages of a catch-up read
    const { location } = await ctx.freshDatabase(t);
    const reads = { below: 0, running: 0, most: 0, count: 0 };
    // A pool of two connections: streams reading at once would take both, and the reads beyond them
    // would wait past the pool's limit, after their 200.
    const server = await startServer(location, { CHANGE_STREAMS_MAX: String(STREAMS), DB_POOL_MAX: '2' }, {
      // Counting the streams' catch-up reads (not the live source's, which reads after the catalogue's
      // version): how many, and the most at once.
      wrapStore: (store) =>
        spyOnStore(store, 'readChanges', async ([since], call) => {
          if ((since as number) >= reads.below) return call();
          reads.count += 1;
          reads.running += 1;
          reads.most = Math.max(reads.most, reads.running);
          try {
            return await call();
          } finally {
            reads.running -= 1;
          }
        }),
    });
    t.after(() => server.stop());
    const products = Array.from({ length: PRODUCTS }, (_, i) => ({ name: `Burst ${i}`, barcode: uniqueBarcode(), priceCents: 100 + i }));
    await server.store.insertProducts((async function* () {
      yield products;
    })());
    const { version } = (await send(`${server.url}/api/v2/shop/changes?limit=1`)).json as ChangePage;
    // The streams' catch-up reads, not the live source's, which reads after the catalogue's version.
    reads.below = version;

    const streams = await Promise.all(Array.from({ length: STREAMS }, () => openEventStream(`${server.url}/api/v2/shop/changes`)));
    t.after(() => streams.forEach((stream) => stream.close()));
    assert.deepEqual(streams.map((stream) => stream.status), streams.map(() => 200));
    await Promise.all(streams.map((stream) => stream.waitFor((event) => event.event === 'caught-up', 30_000)));
    for (const stream of streams) {
      const changes = changesOf(stream.events);
      assert.deepEqual(changes.map((change) => (change.product as { barcode: string }).barcode), products.map((product) => product.barcode));
      assert.equal(changes.at(-1)!.version, version);
    }
    t.diagnostic(`${reads.count} catch-up reads, at most ${reads.most} at once`);
    assert.equal(reads.most, 1, 'catch-up reads at once');
    // Each stream reading its own three pages would be 180 reads; streams at one version share a read.
    assert.ok(reads.count < (STREAMS * 3) / 2, `${reads.count} catch-up reads for ${STREAMS} streams of 3 pages each`);
  });
});
