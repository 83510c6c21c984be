import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { countAll, createProduct, uniqueBarcode } from '../helpers/products.js';
import { rawExchange } from '../helpers/raw-socket.js';

function answerOf(raw: string): { status: number; head: string; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split);
  return { status: Number(head.split(' ')[1]), head: head.toLowerCase(), body: raw.slice(split + 4) };
}

describeEachStore('request targets that name nothing', (ctx) => {
  it('answers any method on a path that is nothing with the 404 problem, QUERY included', async () => {
    for (const path of ['/nothing', '/assets/', '/docs/static/', '/index.html']) {
      const raw = await rawExchange(ctx.server.url, `QUERY ${path} HTTP/1.1\r\nHost: shop.example\r\nX-Request-Id: odd-target\r\nConnection: close\r\n\r\n`);
      const answer = answerOf(raw);
      assert.equal(answer.status, 404, `QUERY ${path}: ${raw}`);
      assert.match(answer.head, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/);
      assert.match(answer.head, /\r\nx-request-id: odd-target\r\n/);
      assert.deepEqual(JSON.parse(answer.body), { type: 'about:blank', title: 'Not Found', status: 404, detail: `There is nothing at QUERY ${path}.` });
    }
    // With a body it does not read, the path is still nothing.
    const raw = await rawExchange(ctx.server.url, 'QUERY /nothing HTTP/1.1\r\nHost: shop.example\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab');
    assert.equal(answerOf(raw).status, 404);
  });

  it('answers the asterisk-form target with the 404 problem, whatever the method', async () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']) {
      const raw = await rawExchange(ctx.server.url, `${method} * HTTP/1.1\r\nHost: shop.example\r\nX-Request-Id: odd-star\r\nConnection: close\r\n\r\n`);
      const answer = answerOf(raw);
      assert.equal(answer.status, 404, `${method} *: ${raw}`);
      assert.match(answer.head, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/);
      assert.match(answer.head, /\r\nx-request-id: odd-star\r\n/);
      if (method !== 'HEAD') {
        assert.deepEqual(JSON.parse(answer.body), { type: 'about:blank', title: 'Not Found', status: 404, detail: `There is nothing at ${method} *.` });
      }
    }
  });

  it('refuses a query that does not decode on every route with the 400 naming it, creating nothing; a preflight is answered', async () => {
    const base = ctx.server.url;
    const product = await createProduct(base);
    // Kept first, so that the answer would come from the kept answers if the query were not looked at.
    assert.equal((await send(`${base}/api/v1/shop/product/${product.pk}`)).status, 200);
    const before = await countAll(base);
    const broken = 'is not valid percent-encoding of UTF-8 text (a `%` not followed by two hex digits, or bytes that are not UTF-8).';
    const paths = [`/api/v1/shop/product/${product.pk}`, '/api/v1/shop/products', '/api/v2/shop/products', '/api/v2/shop/changes', '/healthz', '/readyz', '/metrics', '/', '/openapi.json', '/docs/API.md'];
    for (const path of paths) {
      for (const [query, named, which] of [['x=%ff', 'x', 'The value'], ['%zz', '%zz', "The parameter's name"], ['a=1&b=%', 'b', 'The value']] as const) {
        const answer = await send(`${base}${path}?${query}`);
        assert.equal(answer.status, 400, `GET ${path}?${query}: ${answer.text}`);
        assert.deepEqual(answer.json, { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'The query parameters are not valid.', errors: { [named]: [`${which} ${broken}`] } }, `${path}?${query}`);
      }
    }
    const create = await postJson(`${base}/api/v1/shop/product/?x=%ff`, JSON.stringify({ name: 'Never stored', barcode: uniqueBarcode(), price: '1.00' }));
    assert.equal(create.status, 400, create.text);
    assert.equal(await countAll(base), before);
    const preflight = await send(`${base}/api/v1/shop/product/?x=%ff`, { method: 'OPTIONS', headers: { Origin: 'https://till.example', 'Access-Control-Request-Method': 'POST' } });
    assert.equal(preflight.status, 200, preflight.text);
  });
});
