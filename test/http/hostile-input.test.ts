import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send, type RawResponse } from '../helpers/http.js';
import { countAll } from '../helpers/products.js';
import { rawExchange } from '../helpers/raw-socket.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';

/** Runs per property: enough to meet every shape below many times, few enough to take seconds. */
const RUNS = 150;

/** A 2xx, or a 4xx that is a problem document about itself; never a 5xx. */
function assertHandled(res: RawResponse, what: string): void {
  assert.ok(res.status >= 200 && res.status < 500, `${res.status} for ${what}: ${res.text}`);
  if (res.status >= 400) {
    assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/, what);
    const problem = res.json as { status: number; title: string; detail: string };
    assert.equal(problem.status, res.status, what);
    assert.equal(typeof problem.detail, 'string', what);
  }
}

const oddText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.constantFrom('', ' ', '\u0000', '\uD800', '\uDFFF\uD800', '\u202E\u0644', 'e\u0301'.repeat(250), '👩‍👩‍👧‍👦'.repeat(60), 'a'.repeat(201), '1e3', 'NaN', '12,50', '-0', '0x10'),
);
const hugeNumber = fc.oneof(
  fc.integer({ min: 1, max: 400 }).map((n) => '9'.repeat(n)),
  fc.integer({ min: 1, max: 400 }).map((n) => `0.${'0'.repeat(n)}1`),
  fc.constantFrom('1e309', '-1e309', '1E-400', '-0', '1.0e2', '123456789012.34', '99999999999.99'),
);
const validBarcode = fc.stringMatching(/^[0-9]{12}$/).map((first12) => first12 + String(ean13CheckDigit(first12)));

/** Any JSON text: as JSON values, with raw number text spliced in where a value goes. */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    oddText.map((s) => JSON.stringify(s)),
    hugeNumber,
    fc.constantFrom('true', 'false', 'null', '0', '12.5', '"12.50"'),
    fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(fc.tuple(fc.oneof(fc.constantFrom('name', 'barcode', 'price', '__proto__', 'constructor', 'prototype', 'pk', ''), oddText), tie('value')), { maxLength: 5 })
      .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
})).value;

/** Bodies near a product: the right keys with hostile values, often a valid barcode, sometimes fully valid. */
const productLike = fc
  .record(
    {
      name: fc.oneof(oddText.map((s) => JSON.stringify(s)), jsonText),
      barcode: fc.oneof(validBarcode.map((b) => JSON.stringify(b)), jsonText),
      price: fc.oneof(hugeNumber, fc.constantFrom('1.5', '"0.99"', '0', '"10"'), jsonText),
      __proto__: jsonText,
    },
    { requiredKeys: ['name', 'barcode', 'price'] },
  )
  .map((fields) => `{${Object.entries(fields).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);

/** Valid products with unusual but acceptable values, so that the success path is exercised too. */
const validProduct = fc
  .record({
    name: fc.constantFrom('Café crème', ' Ümlaut ß ', '日本茶 500 g', '👩‍👩‍👧‍👦 pack', 'e\u0301', 'x'.repeat(200), '__proto__'),
    barcode: validBarcode,
    cents: fc.integer({ min: 0, max: 999_999_999_999 }),
    asNumber: fc.boolean(),
  })
  .map(({ name, barcode, cents, asNumber }) => {
    const price = `${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
    return `{"name":${JSON.stringify(name)},"barcode":"${barcode}","price":${asNumber ? price : `"${price}"`}}`;
  });

const deepNesting = fc.integer({ min: 1, max: 20_000 }).chain((depth) =>
  fc.constantFrom('['.repeat(depth) + ']'.repeat(depth), '{"name":'.repeat(depth) + '1' + '}'.repeat(depth), '['.repeat(depth)),
);

const body = fc.oneof(
  validProduct.map((text) => Buffer.from(text)),
  productLike.map((text) => Buffer.from(text)),
  jsonText.map((text) => Buffer.from(text)),
  deepNesting.map((text) => Buffer.from(text)),
  fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes)),
  // Valid JSON around bytes that are not UTF-8.
  fc.uint8Array({ minLength: 1, maxLength: 20 }).map((bytes) => Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('","barcode":"4006381333931","price":"1.00"}')])),
);

const queryValue = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 50 }).map(encodeURIComponent),
  hugeNumber.map(encodeURIComponent),
  fc.integer({ min: -1000, max: 100_000 }).map(String),
  fc.constantFrom('', '%', '%%', '%zz', '%FF%FE', '%E0%A4%A', '%00', 'last', 'LAST', '+1', '1%2B1', '%20', '1.0', '0x1', 'Infinity', '__proto__'),
);
// The separator is drawn by the property like every other part, so that a failure replays from its seed.
const queryString = fc
  .tuple(
    fc.array(fc.tuple(fc.constantFrom('limit', 'offset', 'page', 'page_size', '__proto__', 'constructor', '', 'limit[]', '%'), queryValue), { maxLength: 5 }),
    fc.constantFrom('&', '&&', ';'),
  )
  .map(([pairs, separator]) => pairs.map(([k, v]) => `${k}=${v}`).join(separator));

describeEachStore('hostile input', (ctx) => {
  let pageServer: RunningServer;
  before(async () => {
    pageServer = await startFreshServer(ctx.testStore, { PAGINATION: 'page-number' });
  });
  after(() => pageServer.stop());

  it('answers any body to the create route with a 2xx or a 4xx problem, and stores only what it acknowledged', async () => {
    let created = 0;
    await fc.assert(
      fc.asyncProperty(body, async (bytes) => {
        const before = await countAll(ctx.server.url);
        const res = await postJson(`${ctx.server.url}/api/v1/shop/product/`, bytes);
        const what = bytes.toString('latin1').slice(0, 200);
        assertHandled(res, what);
        const stored = (await countAll(ctx.server.url)) - before;
        if (res.status === 201) created += 1;
        assert.equal(stored, res.status === 201 ? 1 : 0, what);
      }),
      { numRuns: RUNS },
    );
    // The generators do reach the success path, so the property is about both outcomes.
    assert.ok(created > 0, 'no generated body was a valid product');
  });

  it('answers any listing query with a 2xx or a 4xx problem', async () => {
    await fc.assert(
      fc.asyncProperty(queryString, fc.boolean(), async (query, pageStyle) => {
        const target = pageStyle ? pageServer : ctx.server;
        const res = await send(`${target.url}/api/v2/shop/products?${query}`);
        assertHandled(res, query);
        assert.ok([200, 400, 404].includes(res.status), `${res.status} for ${query}`);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers a path that leads out of the page or docs folders with the 404 problem of a path with nothing there', async () => {
    for (const path of [
      '/docs/static/%2e%2e/%2e%2e/%2e%2e/package.json',
      '/docs/static/../../../package.json',
      '/docs/static/%2e%2e/index.html',
      '/assets/%2e%2e/%2e%2e/package.json',
      '/assets/../index.html',
    ]) {
      // Raw: a URL parser would remove the dot segments before they reach the service.
      const raw = await rawExchange(ctx.server.url, `GET ${path} HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n`);
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 404 /, path);
      assert.match(head.toLowerCase(), /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/);
      assert.match(head.toLowerCase(), /\r\naccess-control-allow-origin: \*\r\n/);
      assert.deepEqual(JSON.parse(body), { type: 'about:blank', title: 'Not Found', status: 404, detail: `There is nothing at GET ${path}.` });
    }
  });

  it('answers any product path with a 2xx or a 4xx problem', async () => {
    await fc.assert(
      fc.asyncProperty(queryValue, async (pk) => {
        const res = await send(`${ctx.server.url}/api/v1/shop/product/${pk}`);
        assertHandled(res, pk);
      }),
      { numRuns: RUNS },
    );
  });
});
