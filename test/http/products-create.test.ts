import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { listAll, uniqueBarcode } from '../helpers/products.js';
import { rawExchange } from '../helpers/raw-socket.js';

const PROBLEM = 'application/problem+json; charset=utf-8';
const invalid = (errors: Record<string, string[]>) => ({
  type: 'about:blank',
  title: 'Bad Request',
  status: 400,
  detail: 'The product is not valid.',
  errors,
});
const badBody = (detail: string) => ({ type: 'about:blank', title: 'Bad Request', status: 400, detail });

describeEachStore('POST /api/v1/shop/product/', (ctx) => {
  let createUrl: string;
  before(async () => {
    createUrl = `${ctx.server.url}/api/v1/shop/product/`;
  });

  it('creates a product: 201, the product, Location, CORS; then it is listed and readable', async () => {
    const before = await listAll(ctx.server.url);
    const res = await postJson(createUrl, '{"name": "  Espresso 1 kg ", "barcode": "4006381333931", "price": "12.99"}');
    assert.equal(res.status, 201);
    const created = res.json as { pk: number };
    assert.deepEqual(res.json, { pk: created.pk, name: 'Espresso 1 kg', barcode: '4006381333931', price: '12.99' });
    assert.equal(res.headers.location, `/api/v1/shop/product/${created.pk}`);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(res.headers['access-control-allow-origin'], '*');

    const detail = await send(`${ctx.server.url}${res.headers.location}`);
    assert.equal(detail.status, 200);
    assert.deepEqual(detail.json, res.json);
    assert.deepEqual(await listAll(ctx.server.url), [...before, res.json]);
  });

  it('keeps a JSON-number price exact and writes two decimals', async () => {
    for (const [written, expected] of [['19.99', '19.99'], ['12.5', '12.50'], ['0', '0.00'], ['9999999999.99', '9999999999.99']] as const) {
      const barcode = uniqueBarcode();
      const res = await postJson(createUrl, `{"name": "Numbered", "barcode": "${barcode}", "price": ${written}}`);
      assert.equal(res.status, 201, res.text);
      assert.equal((res.json as { price: string }).price, expected);
    }
  });

  it('accepts the trailing-slash-less address and a charset parameter', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/product`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ name: 'Tea', barcode: uniqueBarcode(), price: '2.00' }),
    });
    assert.equal(res.status, 201);
  });

  it('accepts a name of exactly 200 characters and a body of exactly 16384 bytes', async () => {
    const name = 'é'.repeat(200);
    const res = await postJson(createUrl, JSON.stringify({ name, barcode: uniqueBarcode(), price: '1.00' }));
    assert.equal(res.status, 201);
    assert.equal((res.json as { name: string }).name, name);

    const base = JSON.stringify({ name: 'Padded', barcode: uniqueBarcode(), price: '1.00' });
    const padded = base.slice(0, -1) + ' '.repeat(16384 - Buffer.byteLength(base)) + '}';
    assert.equal(Buffer.byteLength(padded), 16384);
    assert.equal((await postJson(createUrl, padded)).status, 201);
  });

  // Every rejected request: status, whole body, and the catalogue read back unchanged.
  const rejections: Array<{ name: string; body: string | Buffer; headers?: Record<string, string>; status: number; expected: unknown }> = [
    {
      name: 'a missing field (all of them)',
      body: '{}',
      status: 400,
      expected: invalid({ name: ['This field is required.'], barcode: ['This field is required.'], price: ['This field is required.'] }),
    },
    {
      name: 'a wrong check digit',
      body: '{"name": "Pen", "barcode": "4006381333937", "price": "1.00"}',
      status: 400,
      expected: invalid({ barcode: ['EAN-13 check digit is wrong: expected 1, got 7.'] }),
    },
    {
      name: 'a barcode sent as a number',
      body: '{"name": "Pen", "barcode": 4006381333931, "price": "1.00"}',
      status: 400,
      expected: invalid({ barcode: ['Send the barcode as a string of 13 digits, e.g. "4006381333931"; a JSON number loses leading zeros.'] }),
    },
    {
      name: 'a 12-digit barcode',
      body: '{"name": "Pen", "barcode": "400638133393", "price": "1.00"}',
      status: 400,
      expected: invalid({ barcode: ['An EAN-13 barcode is exactly 13 digits (0-9); got 12 digits.'] }),
    },
    {
      name: 'an exponent price (JSON number 1e3)',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": 1e3}',
      status: 400,
      expected: invalid({ price: ['Exponent notation is not accepted; write the price in plain digits, e.g. "1000.00".'] }),
    },
    {
      name: 'an exponent price (string "1e3")',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": "1e3"}',
      status: 400,
      expected: invalid({ price: ['Exponent notation is not accepted; write the price in plain digits, e.g. "1000.00".'] }),
    },
    ...['NaN', 'Infinity', '12,50'].map((price) => ({
      name: `the price "${price}"`,
      body: `{"name": "Pen", "barcode": "4006381333931", "price": "${price}"}`,
      status: 400,
      expected: invalid({ price: [`"${price}" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".`] }),
    })),
    {
      name: 'a negative price',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": "-1"}',
      status: 400,
      expected: invalid({ price: ['The price must be zero or more, written without a minus sign.'] }),
    },
    {
      name: 'a boolean price',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": true}',
      status: 400,
      expected: invalid({ price: ['The price must be a decimal string like "12.50" or a JSON number like 12.5.'] }),
    },
    {
      name: 'three decimals',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": 1.005}',
      status: 400,
      expected: invalid({ price: ['The price has more than 2 decimal places.'] }),
    },
    {
      name: 'eleven digits before the point',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": "12345678901.00"}',
      status: 400,
      expected: invalid({ price: ['The price has more than 10 digits before the decimal point.'] }),
    },
    {
      name: 'a blank name',
      body: '{"name": "   ", "barcode": "4006381333931", "price": "1.00"}',
      status: 400,
      expected: invalid({ name: ['The name must not be blank.'] }),
    },
    {
      name: 'a name of 201 characters',
      body: JSON.stringify({ name: 'x'.repeat(201), barcode: '4006381333931', price: '1.00' }),
      status: 400,
      expected: invalid({ name: ['The name is 201 characters long; at most 200 are allowed.'] }),
    },
    {
      name: 'a control character in the name',
      body: '{"name": "Pen\\u0007", "barcode": "4006381333931", "price": "1.00"}',
      status: 400,
      expected: invalid({ name: ['The name must not contain control characters (such as tabs or line breaks).'] }),
    },
    {
      name: 'a line separator (U+2028) in the name',
      body: '{"name": "Pen\\u2028Blue", "barcode": "4006381333931", "price": "1.00"}',
      status: 400,
      expected: invalid({ name: ['The name must not contain control characters (such as tabs or line breaks).'] }),
    },
    {
      name: 'an unpaired surrogate in the name',
      body: '{"name": "Pen \\ud800", "barcode": "4006381333931", "price": "1.00"}',
      status: 400,
      expected: invalid({ name: ['The name is not valid Unicode (it has an unpaired surrogate).'] }),
    },
    {
      name: 'a name that is not a string',
      body: '{"name": 5, "barcode": "4006381333931", "price": "1.00"}',
      status: 400,
      expected: invalid({ name: ['The name must be a string.'] }),
    },
    {
      name: 'unknown fields (a typo, and pk)',
      body: '{"name": "Pen", "barcode": "4006381333931", "prise": "1.00", "pk": 7}',
      status: 400,
      expected: invalid({
        prise: ['Unknown field; a product is created from name, barcode, price only.'],
        pk: ['Unknown field; a product is created from name, barcode, price only.'],
        price: ['This field is required.'],
      }),
    },
    {
      name: 'a __proto__ key',
      body: '{"__proto__": {"name": "Pen"}, "name": "Pen", "barcode": "4006381333931", "price": "1.00"}',
      status: 400,
      // Built from JSON: in an object literal, __proto__ would set the prototype instead of a key.
      expected: invalid(JSON.parse('{"__proto__": ["Unknown field; a product is created from name, barcode, price only."]}')),
    },
    { name: 'invalid JSON', body: '{"name": "Pen",', status: 400, expected: undefined },
    { name: 'a JSON array', body: '[{"name": "Pen"}]', status: 400, expected: badBody('The body must be a JSON object with name, barcode and price.') },
    { name: 'a JSON string', body: '"Pen"', status: 400, expected: badBody('The body must be a JSON object with name, barcode and price.') },
    { name: 'JSON null', body: 'null', status: 400, expected: badBody('The body must be a JSON object with name, barcode and price.') },
    { name: 'an empty body', body: '', status: 400, expected: badBody('The body is empty; send a JSON object.') },
    { name: 'duplicate keys', body: '{"name": "Pen", "name": "Ink", "barcode": "4006381333931", "price": "1.00"}', status: 400, expected: undefined },
    {
      name: 'invalid UTF-8',
      body: Buffer.concat([Buffer.from('{"name": "Pen '), Buffer.from([0xc3, 0x28]), Buffer.from('", "barcode": "4006381333931", "price": "1.00"}')]),
      status: 400,
      expected: badBody('The body is not valid UTF-8, so it is not JSON.'),
    },
    {
      name: 'deep nesting',
      body: `{"name": ${'['.repeat(8000)}${']'.repeat(8000)}, "barcode": "4006381333931", "price": "1.00"}`,
      status: 400,
      expected: badBody('The body is not valid JSON: it is nested too deep to read (a product is one object of strings and numbers).'),
    },
    {
      name: 'a form-encoded body',
      body: 'name=Pen&barcode=4006381333931&price=1.00',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      status: 415,
      expected: {
        type: 'about:blank',
        title: 'Unsupported Media Type',
        status: 415,
        detail: 'Send the product as JSON, with the header Content-Type: application/json.',
      },
    },
    {
      name: 'JSON sent as text/plain',
      body: '{"name": "Pen", "barcode": "4006381333931", "price": "1.00"}',
      headers: { 'Content-Type': 'text/plain' },
      status: 415,
      expected: undefined,
    },
    {
      name: 'a product in a body marked gzip-encoded (Content-Encoding), which the service does not decode',
      body: JSON.stringify({ name: 'Pen', barcode: uniqueBarcode(), price: '1.00' }),
      headers: { 'Content-Encoding': 'gzip' },
      status: 415,
      expected: {
        type: 'about:blank',
        title: 'Unsupported Media Type',
        status: 415,
        detail: 'The body is encoded (Content-Encoding: gzip), which the service does not decode; send it as plain JSON.',
      },
    },
    // A coding that is no short name is not repeated back: the header may hold anything.
    ...[
      ['too long to repeat (Content-Encoding of 15,000 characters)', 'x'.repeat(15_000)],
      ['that is no name (Content-Encoding: identity;q=1)', 'identity;q=1'],
    ].map(([what, coding]) => ({
      name: `a body in a coding ${what}`,
      body: JSON.stringify({ name: 'Pen', barcode: uniqueBarcode(), price: '1.00' }),
      headers: { 'Content-Encoding': coding! },
      status: 415,
      expected: {
        type: 'about:blank',
        title: 'Unsupported Media Type',
        status: 415,
        detail: 'The body is encoded (a Content-Encoding other than identity), which the service does not decode; send it as plain JSON.',
      },
    })),
    {
      name: 'a body of 16385 bytes',
      body: `{"name": "${'x'.repeat(16385 - 12)}"}`,
      status: 413,
      expected: {
        type: 'about:blank',
        title: 'Payload Too Large',
        status: 413,
        detail: 'The body is larger than the limit of 16384 bytes.',
      },
    },
  ];

  for (const rejection of rejections) {
    it(`answers ${rejection.status} to ${rejection.name} and stores nothing`, async () => {
      const before = await listAll(ctx.server.url);
      const res = await send(createUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...rejection.headers },
        body: rejection.body,
      });
      assert.equal(res.status, rejection.status, res.text);
      assert.equal(res.headers['content-type'], PROBLEM);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      if (rejection.expected !== undefined) assert.deepEqual(res.json, rejection.expected);
      else assert.equal((res.json as { status: number }).status, rejection.status);
      assert.deepEqual(await listAll(ctx.server.url), before);
    });
  }

  it('answers 413 at once when Content-Length declares too much, without reading the body', async () => {
    const res = await send(createUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': 1_000_000 },
      body: '{}',
    }).catch((error: unknown) => error);
    // The ctx.server answers before the declared bytes arrive, then closes the connection.
    assert.ok(!(res instanceof Error), String(res));
    assert.equal((res as { status: number }).status, 413);
  });

  it('answers 400 to a product sent in a transfer coding other than chunked, and stores nothing', async () => {
    const barcode = uniqueBarcode();
    const body = JSON.stringify({ name: 'Pen', barcode, price: '1.00' });
    const raw = await rawExchange(
      ctx.server.url,
      `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n` +
        `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    assert.match(raw, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(raw, /"detail":"The transfer coding gzip is not supported; send the body with Content-Length or chunked alone\."/);
    assert.deepEqual((await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`)).json, []);
  });

  it('answers 415 to a body without Content-Type, and to no body at all', async () => {
    for (const body of ['{"name": "Pen"}', undefined]) {
      const res = await send(createUrl, { method: 'POST', body });
      assert.equal(res.status, 415);
      assert.equal(res.headers['content-type'], PROBLEM);
    }
  });

  it('answers 409 to a barcode already in the catalogue and keeps the first product', async () => {
    const barcode = uniqueBarcode();
    const first = await postJson(createUrl, JSON.stringify({ name: 'First', barcode, price: '1.00' }));
    assert.equal(first.status, 201);
    const before = await listAll(ctx.server.url);
    const second = await postJson(createUrl, JSON.stringify({ name: 'Second', barcode, price: '2.00' }));
    assert.equal(second.status, 409);
    assert.equal(second.headers['content-type'], PROBLEM);
    assert.deepEqual(second.json, {
      type: 'about:blank',
      title: 'Conflict',
      status: 409,
      detail: `A product with barcode ${barcode} is already in the catalogue.`,
      errors: { barcode: ['A product with this barcode is already in the catalogue.'] },
    });
    assert.deepEqual(await listAll(ctx.server.url), before);
  });

  // A PostgreSQL sequence would burn a value on a failed insert: the pks would then differ between
  // databases given the same requests.
  it('draws no pk for a rejected create: the next product takes the following pk', async () => {
    const a = await postJson(createUrl, JSON.stringify({ name: 'A', barcode: uniqueBarcode(), price: '1.00' }));
    assert.equal(a.status, 201);
    const duplicate = await postJson(createUrl, JSON.stringify({ name: 'dup', barcode: (a.json as { barcode: string }).barcode, price: '1.00' }));
    assert.equal(duplicate.status, 409);
    const b = await postJson(createUrl, JSON.stringify({ name: 'B', barcode: uniqueBarcode(), price: '1.00' }));
    assert.equal(b.status, 201);
    assert.equal((b.json as { pk: number }).pk, (a.json as { pk: number }).pk + 1);
  });
});
