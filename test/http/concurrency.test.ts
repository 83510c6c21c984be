import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson } from '../helpers/http.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';

describeEachStore('concurrent creates', (ctx) => {
  it('30 concurrent POSTs of one new barcode: exactly one 201, the rest 409, one row', async () => {
    const barcode = uniqueBarcode();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        postJson(`${ctx.server.url}/api/v1/shop/product/`, JSON.stringify({ name: `Racer ${i}`, barcode, price: '1.00' })),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [201, ...Array(29).fill(409)]);
    const stored = (await listAll(ctx.server.url)).filter((p) => p.barcode === barcode);
    assert.equal(stored.length, 1);
    const winner = answers.find((a) => a.status === 201)!;
    assert.deepEqual(stored[0], winner.json);
  });

  it('30 concurrent POSTs of different barcodes: all 201 with distinct pks', async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        postJson(`${ctx.server.url}/api/v1/shop/product/`, JSON.stringify({ name: `Many ${i}`, barcode: uniqueBarcode(), price: '1.00' })),
      ),
    );
    assert.ok(answers.every((a) => a.status === 201));
    assert.equal(new Set(answers.map((a) => (a.json as { pk: number }).pk)).size, 30);
  });
});

describeEachStore('creates with and without Idempotency-Key at once', (ctx) => {
  it('keyed creates (each in its own transaction) and grouped plain creates never disturb each other', async () => {
    const before = await listAll(ctx.server.url);
    const sent = Array.from({ length: 40 }, (_, i) => ({ name: `Mixed ${i}`, barcode: uniqueBarcode(), price: '1.00', keyed: i % 2 === 0 }));
    const answers = await Promise.all(
      sent.map(({ keyed, ...product }, i) =>
        postJson(`${ctx.server.url}/api/v1/shop/product/`, JSON.stringify(product), keyed ? { 'Idempotency-Key': `mixed-${process.pid}-${i}` } : {}),
      ),
    );
    assert.deepEqual(answers.map((a) => a.status), sent.map(() => 201));
    const stored = (await listAll(ctx.server.url)).slice(before.length);
    assert.deepEqual(stored.map((p) => p.barcode).sort(), sent.map((p) => p.barcode).sort());
  });
});
