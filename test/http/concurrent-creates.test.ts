import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';

describeEachStore('concurrent creates', (ctx) => {
  it('answers 201 to every new barcode and 409 to every duplicate sent at the same moment', async () => {
    // Two products per barcode, all sent at once, so that duplicates land in the same group commit.
    const barcodes = Array.from({ length: 40 }, () => uniqueBarcode());
    const bodies = [...barcodes, ...barcodes].map((barcode, i) => JSON.stringify({ name: `Concurrent ${i}`, barcode, price: '3.50' }));
    const answers = await Promise.all(bodies.map((body) => postJson(`${ctx.server.url}/api/v1/shop/product/`, body)));

    const statuses = new Map<string, number[]>();
    for (const [i, answer] of answers.entries()) {
      const barcode = barcodes[i % barcodes.length]!;
      statuses.set(barcode, [...(statuses.get(barcode) ?? []), answer.status]);
    }
    for (const [barcode, got] of statuses) assert.deepEqual(got.sort(), [201, 409], barcode);

    const created = answers.filter((a) => a.status === 201).map((a) => a.json as { pk: number; barcode: string });
    assert.equal(new Set(created.map((p) => p.pk)).size, barcodes.length, 'every 201 has its own pk');
    for (const product of created) {
      const read = await send(`${ctx.server.url}/api/v1/shop/product/${product.pk}`);
      assert.deepEqual(read.json, product);
    }
    const duplicate = answers.find((a) => a.status === 409)!;
    assert.equal((duplicate.json as { status: number }).status, 409);
  });

  it('keeps count equal to the products listed after concurrent creates', async () => {
    const bodies = Array.from({ length: 60 }, (_, i) => JSON.stringify({ name: `Counted ${i}`, barcode: uniqueBarcode(), price: '1.00' }));
    // One invalid and one duplicate in the same burst must not move the counter.
    bodies.push(JSON.stringify({ name: 'Bad', barcode: '4006381333932', price: '1.00' }));
    bodies.push(bodies[0]!);
    await Promise.all(bodies.map((body) => postJson(`${ctx.server.url}/api/v1/shop/product/`, body)));

    const all = await listAll(ctx.server.url);
    const page = await send(`${ctx.server.url}/api/v2/shop/products?limit=1`);
    assert.equal((page.json as { count: number }).count, all.length);
    assert.equal(new Set(all.map((p) => p.barcode)).size, all.length);
  });
});
