import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';

interface Attempt {
  readonly body: { name: string; barcode: string; price: string };
  readonly key?: string;
}

describeEachStore('200 creates at once, grouped', (ctx) => {
  it('stores every 201, nothing for a 409, and one product per Idempotency-Key', async () => {
    const run = Date.now().toString(36);
    const attempts: Attempt[] = [];
    for (let i = 0; i < 120; i++) attempts.push({ body: { name: `Fresh ${i}`, barcode: uniqueBarcode(), price: '1.00' } });
    // Twenty barcodes sent twice, by requests that differ in name: one of each pair must be refused.
    for (let i = 0; i < 20; i++) {
      const barcode = uniqueBarcode();
      attempts.push({ body: { name: `Pair ${i} a`, barcode, price: '2.00' } }, { body: { name: `Pair ${i} b`, barcode, price: '2.00' } });
    }
    // Twenty keys, each sent twice with the same product: one product per key, both answered with it.
    for (let i = 0; i < 20; i++) {
      const attempt = { body: { name: `Keyed ${i}`, barcode: uniqueBarcode(), price: '3.00' }, key: `grouped-${run}-${i}` };
      attempts.push(attempt, attempt);
    }
    // Interleaved, so that duplicates and keys meet in the same groups.
    const order = attempts.map((_, i) => (i * 7) % attempts.length);
    assert.equal(new Set(order).size, 200);
    const answers = await Promise.all(
      order.map(async (i) => {
        const { body, key } = attempts[i]!;
        const res = await postJson(`${ctx.server.url}/api/v1/shop/product/`, JSON.stringify(body), key === undefined ? {} : { 'Idempotency-Key': key });
        return { attempt: attempts[i]!, res };
      }),
    );

    const created = answers.filter(({ res }) => res.status === 201);
    const refused = answers.filter(({ res }) => res.status === 409);
    assert.equal(created.length + refused.length, 200, `statuses: ${answers.map(({ res }) => res.status).join(',')}`);
    assert.equal(refused.length, 20);

    const stored = await listAll(ctx.server.url);
    const byBarcode = new Map(stored.map((product) => [product.barcode, product]));
    assert.equal(byBarcode.size, stored.length, 'one product per barcode');
    for (const { attempt, res } of created) {
      const product = res.json as { pk: number };
      assert.deepEqual(product, { pk: product.pk, ...attempt.body });
      assert.deepEqual(byBarcode.get(attempt.body.barcode), product);
      assert.deepEqual((await send(`${ctx.server.url}/api/v1/shop/product/${product.pk}`)).json, product);
    }
    for (const { attempt } of refused) {
      assert.equal(attempt.key, undefined);
      assert.notEqual(byBarcode.get(attempt.body.barcode)?.name, attempt.body.name, 'a refused product is not stored');
    }
    for (let i = 0; i < 20; i++) {
      const keyed = created.filter(({ attempt }) => attempt.key === `grouped-${run}-${i}`);
      assert.equal(keyed.length, 2);
      assert.equal((keyed[0]!.res.json as { pk: number }).pk, (keyed[1]!.res.json as { pk: number }).pk);
    }
    assert.equal(stored.length, 120 + 20 + 20);
    const page = await send(`${ctx.server.url}/api/v2/shop/products?limit=1`);
    assert.equal((page.json as { count: number }).count, stored.length);
  });
});
