import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, type RawResponse } from '../helpers/http.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';
import { startServer } from '../helpers/server.js';
import { outsideSql } from '../helpers/outside-sql.js';

describeEachStore('Idempotency-Key on create', (ctx) => {
  let n = 0;
  const newKey = () => `key-${process.pid}-${++n}`;
  const post = (body: object | string, key?: string): Promise<RawResponse> =>
    postJson(
      `${ctx.server.url}/api/v1/shop/product/`,
      typeof body === 'string' ? body : JSON.stringify(body),
      key === undefined ? {} : { 'Idempotency-Key': key },
    );


  it('replays the first answer to a repeat and creates nothing more', async () => {
    const key = newKey();
    const body = { name: 'Tea 500 g', barcode: uniqueBarcode(), price: '4.20' };
    const first = await post(body, key);
    assert.equal(first.status, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const count = (await listAll(ctx.server.url)).length;

    const again = await post(body, key);
    assert.equal(again.status, 201);
    assert.deepEqual(again.json, first.json);
    assert.equal(again.headers.location, first.headers.location);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal((await listAll(ctx.server.url)).length, count);
  });

  it('answers 410 to a replay whose product plain SQL moved away and put another under its pk, creating nothing', async () => {
    const key = newKey();
    const body = { name: 'Moved tea', barcode: uniqueBarcode(), price: '4.20' };
    const { pk } = (await post(body, key)).json as { pk: number };
    const { location } = ctx.server;
    await outsideSql(location, `UPDATE product SET pk = ${location.kind === 'postgres' ? 'DEFAULT' : 'pk + 1000'} WHERE pk = ${pk}`);
    const insert = location.kind === 'postgres' ? 'INSERT INTO product (pk, name, barcode, price_cents) OVERRIDING SYSTEM VALUE' : 'INSERT INTO product (pk, name, barcode, price_cents)';
    await outsideSql(location, `${insert} VALUES (${pk}, 'In its place', $1, 100)`, [uniqueBarcode()]);
    const count = (await listAll(ctx.server.url)).length;
    const again = await post(body, key);
    assert.equal(again.status, 410);
    assert.equal(
      (again.json as { detail: string }).detail,
      `The product this Idempotency-Key created (pk ${pk}) is no longer in the catalogue: another product is under its pk since (a restored backup, or plain SQL that moved products). It is not created again.`,
    );
    assert.equal((await listAll(ctx.server.url)).length, count);
  });

  it('treats the same product written differently as the same request', async () => {
    const key = newKey();
    const barcode = uniqueBarcode();
    const first = await post(`{"name":"Rice","barcode":"${barcode}","price":"2.50"}`, key);
    const again = await post(`{"price": 2.5, "barcode":"${barcode}", "name":"  Rice "}`, key);
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.deepEqual(again.json, first.json);
  });

  it('refuses the same key with a different product (422) and stores nothing', async () => {
    const key = newKey();
    assert.equal((await post({ name: 'Salt', barcode: uniqueBarcode(), price: '0.80' }, key)).status, 201);
    const count = (await listAll(ctx.server.url)).length;
    const other = await post({ name: 'Pepper', barcode: uniqueBarcode(), price: '3.10' }, key);
    assert.equal(other.status, 422);
    assert.match(other.headers['content-type'] ?? '', /^application\/problem\+json/);
    assert.deepEqual((other.json as { errors: unknown }).errors, { 'Idempotency-Key': ['Already used with a different body.'] });
    assert.equal((await listAll(ctx.server.url)).length, count);
  });

  it('still validates the body and reports a taken barcode first', async () => {
    const key = newKey();
    assert.equal((await post({ name: 'Bad', barcode: '123', price: '1.00' }, key)).status, 400);
    const taken = { name: 'Taken', barcode: uniqueBarcode(), price: '1.00' };
    assert.equal((await post(taken)).status, 201);
    assert.equal((await post(taken, newKey())).status, 409);
    // A key whose request was refused is not used up.
    assert.equal((await post({ name: 'Good', barcode: uniqueBarcode(), price: '1.00' }, key)).status, 201);
  });

  it('refuses a malformed key', async () => {
    for (const key of ['x'.repeat(256), 'has space', 'café']) {
      const res = await post({ name: 'K', barcode: uniqueBarcode(), price: '1.00' }, key);
      assert.equal(res.status, 400, key);
    }
  });

  it('refuses an empty or blank key (400 naming the header) and stores nothing', async () => {
    for (const key of ['', ' ', '   ', '\t']) {
      const barcode = uniqueBarcode();
      const res = await post({ name: 'Blank key', barcode, price: '1.00' }, key);
      assert.equal(res.status, 400, JSON.stringify(key));
      assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
      assert.deepEqual(Object.keys((res.json as { errors: object }).errors), ['Idempotency-Key']);
      assert.equal((await listAll(ctx.server.url)).filter((p) => p.barcode === barcode).length, 0, JSON.stringify(key));
    }
  });

  it('creates one product from concurrent requests with one key', async () => {
    const key = newKey();
    const body = { name: 'Race', barcode: uniqueBarcode(), price: '9.99' };
    const before = (await listAll(ctx.server.url)).length;
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(body, key)));
    assert.deepEqual(answers.map((a) => a.status), Array(8).fill(201));
    assert.equal(new Set(answers.map((a) => a.text)).size, 1);
    assert.equal((await listAll(ctx.server.url)).length, before + 1);
  });

  it('creates one product from concurrent requests with one key and different bodies', async () => {
    const key = newKey();
    const before = (await listAll(ctx.server.url)).length;
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => post({ name: `Race ${i}`, barcode: uniqueBarcode(), price: '1.00' }, key)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [201, 422, 422, 422, 422, 422]);
    assert.equal((await listAll(ctx.server.url)).length, before + 1);
  });

  it('remembers keys across a restart', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    const body = JSON.stringify({ name: 'Durable', barcode: uniqueBarcode(), price: '5.00' });
    const headers = { 'Idempotency-Key': newKey() };
    const first = await startServer(location);
    const created = await postJson(`${first.url}/api/v1/shop/product/`, body, headers);
    await first.stop();
    const second = await startServer(location);
    const again = await postJson(`${second.url}/api/v1/shop/product/`, body, headers);
    await second.stop();
    assert.equal(again.status, 201);
    assert.deepEqual(again.json, created.json);
    assert.equal(again.headers['idempotent-replayed'], 'true');
  });
});
