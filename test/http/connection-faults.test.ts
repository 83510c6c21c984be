import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { uniqueBarcode } from '../helpers/products.js';
import { rawExchange, resetAwareExchange, sendEndlessBody } from '../helpers/raw-socket.js';

/** The status lines of every answer in a raw exchange, in order. */
function statusLines(raw: string): string[] {
  return raw.match(/HTTP\/1\.1 \d{3} [^\r]*/g) ?? [];
}

describeEachStore('what a connection carries besides one request', (ctx) => {
  for (const [label, trailing] of [
    ['a second JSON object', '{"name": "x"}'],
    ['a line that is no request', 'BOGUS\r\n\r\n'],
  ] as const) {
    it(`sends a create's 201 before refusing ${label} that follows its body`, async () => {
      const barcode = uniqueBarcode();
      const body = `{"name": "Trailing", "barcode": "${barcode}", "price": "007.10"}`;
      const raw = await rawExchange(
        ctx.server.url,
        `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}${trailing}`,
      );
      assert.deepEqual(statusLines(raw), ['HTTP/1.1 201 Created', 'HTTP/1.1 400 Bad Request']);
      const created = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4, raw.indexOf('HTTP/1.1 400'))) as { pk: number };
      const stored = await send(`${ctx.server.url}/api/v1/shop/product/${created.pk}`);
      assert.deepEqual(stored.json, { pk: created.pk, name: 'Trailing', barcode, price: '7.10' });
    });
  }

  it("sends every pipelined create's 201 before refusing the bytes that follow them", async () => {
    const barcodes = [uniqueBarcode(), uniqueBarcode(), uniqueBarcode(), uniqueBarcode()];
    const post = (barcode: string) => {
      const body = `{"name": "Pipelined", "barcode": "${barcode}", "price": "2.50"}`;
      return `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };
    const raw = await rawExchange(
      ctx.server.url,
      'GET /api/v1/shop/product/999999 HTTP/1.1\r\nHost: shop.example\r\n\r\n' + barcodes.map(post).join('') + '9"}\r\n\r\n',
    );
    assert.deepEqual(statusLines(raw), ['HTTP/1.1 404 Not Found', ...barcodes.map(() => 'HTTP/1.1 201 Created'), 'HTTP/1.1 400 Bad Request']);
    for (const barcode of barcodes) {
      const listed = await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`);
      assert.equal((listed.json as unknown[]).length, 1);
    }
  });

  it('serves pipelined reads and writes in the order sent: a read behind a create sees it, a read before it does not', async () => {
    const barcode = uniqueBarcode();
    const body = `{"name": "In order", "barcode": "${barcode}", "price": "3.00"}`;
    const get = (target: string) => `GET ${target} HTTP/1.1\r\nHost: shop.example\r\n\r\n`;
    const raw = await rawExchange(
      ctx.server.url,
      get(`/api/v1/shop/products?barcode=${barcode}`) +
        `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
        get(`/api/v1/shop/products?barcode=${barcode}`) +
        get(`/api/v2/shop/products?barcode=${barcode}`) +
        get('/api/v2/shop/changes?since=0&limit=10000'),
      5000,
      true,
    );
    assert.deepEqual(statusLines(raw), ['HTTP/1.1 200 OK', 'HTTP/1.1 201 Created', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    const bodies = raw.split(/\r\n\r\n(?=[[{])/).slice(1).map((part) => part.slice(0, part.search(/HTTP\/1\.1 |$/)));
    const [before, created, after, page, changes] = bodies.map((text) => JSON.parse(text) as unknown);
    assert.deepEqual(before, []);
    const { pk } = created as { pk: number };
    assert.deepEqual(after, [{ pk, name: 'In order', barcode, price: '3.00' }]);
    assert.equal((page as { count: number }).count, 1);
    assert.ok((changes as { changes: Array<{ pk: number }> }).changes.some((change) => change.pk === pk), 'the change feed behind the create holds it');
  });

  it('serves 30 reads pipelined behind one create after it, without a listener each on the create\'s answer', async () => {
    const barcode = uniqueBarcode();
    const body = `{"name": "Many behind", "barcode": "${barcode}", "price": "1.00"}`;
    const get = `GET /api/v1/shop/products?barcode=${barcode} HTTP/1.1\r\nHost: shop.example\r\n\r\n`;
    // Node warns from an answer's 11th listener; heard here where the server runs in this process.
    const warnings: string[] = [];
    const hear = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', hear);
    try {
      const raw = await rawExchange(
        ctx.server.url,
        `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` + get.repeat(30),
        5000,
        true,
      );
      assert.deepEqual(statusLines(raw), ['HTTP/1.1 201 Created', ...Array<string>(30).fill('HTTP/1.1 200 OK')]);
      assert.equal(raw.split('"Many behind"').length - 1, 31, 'every read sees the product');
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', hear);
    }
    assert.deepEqual(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning')), []);
  });

  it('answers a create whose client half-closed right after the request, and the product is stored', async () => {
    const barcode = uniqueBarcode();
    const body = `{"name": "Half closed", "barcode": "${barcode}", "price": "1.25"}`;
    const raw = await rawExchange(
      ctx.server.url,
      `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
        'GET /healthz HTTP/1.1\r\nHost: shop.example\r\n\r\n',
      5000,
      true,
    );
    assert.deepEqual(statusLines(raw), ['HTTP/1.1 201 Created', 'HTTP/1.1 200 OK']);
    const listed = await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`);
    assert.equal((listed.json as unknown[]).length, 1);
  });

  for (const [label, head] of [
    ['a 405 (PUT on a product)', 'PUT /api/v1/shop/product/1 HTTP/1.1'],
    ['a 405 (POST /healthz)', 'POST /healthz HTTP/1.1'],
    ['a 415 (no Content-Type)', 'POST /api/v1/shop/product/ HTTP/1.1'],
    ['a 415 (text/plain)', 'POST /api/v1/shop/product/ HTTP/1.1\r\nContent-Type: text/plain'],
    ['a GET with a body', 'GET /api/v1/shop/products HTTP/1.1'],
  ] as const) {
    it(`reads no more than the body limit of a body nobody reads: ${label}`, async () => {
      // Closed by the service within 30 s, a bound for a service that reads on without end (it closes after 16 KiB).
      const result = await sendEndlessBody(ctx.server.url, `${head}\r\nHost: shop.example\r\nTransfer-Encoding: chunked\r\n\r\n`, 30_000);
      assert.equal(result.closedByServer, true, `still reading after ${result.bytesWritten} bytes`);
      assert.match(statusLines(result.answer)[0] ?? '', /^HTTP\/1\.1 (405|415|200) /);
    });
  }

  it('says Connection: close on the answer to a body nobody reads that is declared past the limit or chunked, and closes the connection once it is written', async () => {
    const body = 'x'.repeat(20_000);
    const declared = `Content-Length: ${body.length}\r\n\r\n${body}`;
    const chunked = `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    for (const [head, status] of [['PUT /api/v1/shop/product/1', '405 Method Not Allowed'], ['GET /healthz', '200 OK']] as const) {
      for (const rest of [declared, chunked]) {
        // A request pipelined behind: the client is told the connection closes before it, not after.
        const raw = await rawExchange(ctx.server.url, `${head} HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n${rest}GET /healthz HTTP/1.1\r\nHost: shop.example\r\n\r\n`);
        assert.deepEqual(statusLines(raw), [`HTTP/1.1 ${status}`], `${head}, ${rest.slice(0, 20)}`);
        assert.match(raw, /\r\nConnection: close\r\n/i);
        assert.doesNotMatch(raw, /\r\nConnection: keep-alive\r\n/i);
      }
    }
  });

  it('runs no request pipelined behind an answer that closes the connection: a create there is stored only if answered', async () => {
    const body = `{"pad": "${'x'.repeat(20_000)}"}`;
    const declared = `Content-Length: ${body.length}\r\n\r\n${body}`;
    const chunked = `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    for (const [head, status] of [
      ['PUT /api/v1/shop/product/1 HTTP/1.1\r\nContent-Type: application/json', '405 Method Not Allowed'],
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nContent-Type: application/json\r\nContent-Encoding: gzip', '415 Unsupported Media Type'],
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nContent-Type: text/plain', '415 Unsupported Media Type'],
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nContent-Type: application/json', '413 Payload Too Large'],
      ['GET /api/v1/shop/products?barcode=0000000000000 HTTP/1.1', '200 OK'],
    ] as const) {
      for (const rest of [declared, chunked]) {
        const barcode = uniqueBarcode();
        const product = `{"name": "Behind a close", "barcode": "${barcode}", "price": "1.00"}`;
        const behind =
          'POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nConnection: close\r\n' +
          `Content-Length: ${product.length}\r\n\r\n${product}`;
        const what = `${head.split('\r\n').slice(0, 3).join(', ')}; ${rest.slice(0, 17)}`;
        const raw = await rawExchange(ctx.server.url, `${head}\r\nHost: shop.example\r\n${rest}${behind}`);
        // A body that has arrived whole by the time its answer is written is passed over, and the
        // connection kept for the create; one still arriving closes it, and the create is not run.
        const statuses = statusLines(raw);
        if (statuses.length === 1) assert.match(raw, /\r\nConnection: close\r\n/i, what);
        else assert.deepEqual(statuses.slice(1), ['HTTP/1.1 201 Created'], what);
        assert.equal(statuses[0], `HTTP/1.1 ${status}`, what);
        // Had the create run unanswered, it would have been stored as the connection closed: give it the time.
        await new Promise((resolve) => setTimeout(resolve, 200));
        const listed = await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`);
        assert.equal((listed.json as unknown[]).length, statuses.length - 1, `${what}: the create behind is stored if and only if answered`);
      }
    }
  });

  it('closes the connection with the one answer to a request whose small declared body is still arriving', async () => {
    // Kept, the connection could carry no next request until the body ended, and the request's time
    // limit would strike it with a second answer, a 408, long after the first.
    for (const head of ['GET /healthz HTTP/1.1', 'PUT /api/v1/shop/product/1 HTTP/1.1', 'POST /api/v1/shop/product/ HTTP/1.1\r\nContent-Type: text/plain']) {
      const { answer, reset } = await resetAwareExchange(ctx.server.url, `${head}\r\nHost: shop.example\r\nContent-Length: 1000\r\n\r\n${'x'.repeat(10)}`);
      assert.equal(statusLines(answer).length, 1, head);
      assert.match(answer, /\r\nConnection: close\r\n/i, head);
      assert.equal(reset, false, `${head}: reset`);
    }
  });

  it('drains a small body nobody reads and keeps the connection for the next request', async () => {
    const raw = await rawExchange(
      ctx.server.url,
      'GET /healthz HTTP/1.1\r\nHost: shop.example\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' +
        'GET /healthz HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n',
    );
    assert.deepEqual(statusLines(raw), ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
  });

  it('closes the connection after a body it read and refused as not JSON, and says so on the answer (Fastify closes after any body its parser refused)', async () => {
    const raw = await rawExchange(
      ctx.server.url,
      'POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{bad}' +
        'GET /healthz HTTP/1.1\r\nHost: shop.example\r\n\r\n',
    );
    assert.deepEqual(statusLines(raw), ['HTTP/1.1 400 Bad Request']);
    assert.match(raw, /\r\nConnection: close\r\n/i);
  });

  it('refuses an encoded body on its head, reads it past, stores nothing and keeps the connection for the next request', async () => {
    const barcode = uniqueBarcode();
    const product = `{"name": "Encoded", "barcode": "${barcode}", "price": "1.00"}`;
    for (const rest of [`Content-Length: ${product.length}\r\n\r\n${product}`, `Transfer-Encoding: chunked\r\n\r\n${product.length.toString(16)}\r\n${product}\r\n0\r\n\r\n`]) {
      const raw = await rawExchange(
        ctx.server.url,
        `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n${rest}` +
          'GET /healthz HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n',
      );
      assert.deepEqual(statusLines(raw), ['HTTP/1.1 415 Unsupported Media Type', 'HTTP/1.1 200 OK'], rest.slice(0, 20));
    }
    const listed = await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`);
    assert.deepEqual(listed.json, [], 'the encoded create stored nothing');
  });

  it('refuses two Host headers with a 400 problem (RFC 9112 §3.2)', async () => {
    const raw = await rawExchange(
      ctx.server.url,
      'GET /api/v2/shop/products HTTP/1.1\r\nHost: shop.example\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
    );
    assert.deepEqual(statusLines(raw), ['HTTP/1.1 400 Bad Request']);
    assert.deepEqual(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), {
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'The request has more than one Host header.',
    });
    assert.doesNotMatch(raw, /evil\.example/);
  });
});
