import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { rawExchange } from '../helpers/raw-socket.js';

/**
 * Sends `head` alone, then `body` once the server says `100 Continue`; returns everything answered
 * until the server closes the connection.
 */
function continueExchange(url: string, head: string, body: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let answer = '';
    let sent = false;
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
      if (!sent && answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        sent = true;
        socket.write(body);
      }
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer')));
  });
}

describeEachStore('Expect: 100-continue', (ctx) => {
  let pk: number;
  before(async () => {
    pk = (await createProduct(ctx.server.url)).pk;
  });

  it('answers a request refused on its head without 100 Continue, and closes the connection', async () => {
    const refusals: [string, number][] = [
      // A method the path does not serve.
      [`PUT /api/v1/shop/product/${pk} HTTP/1.1\r\nHost: shop.example\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n`, 405],
      // A body that is not JSON.
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nExpect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n', 415],
      // A body in a coding the service does not decode: refused on its head, though its type is JSON.
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\n', 415],
      // A body over the limit.
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 20000\r\n\r\n', 413],
    ];
    for (const [head, status] of refusals) {
      // The body is never sent, as RFC 9110 allows after a final answer: the server must still close
      // (rawExchange fails when the connection stays open), and may not take what follows as a request.
      const raw = await rawExchange(ctx.server.url, `${head}GET /healthz HTTP/1.1\r\nHost: shop.example\r\n\r\n`, 3000);
      assert.match(raw, new RegExp(`^HTTP/1\\.1 ${status} `), head);
      const [answerHead = ''] = raw.split('\r\n\r\n');
      assert.match(answerHead.toLowerCase(), /\r\nconnection: close(\r\n|$)/, head);
      assert.equal(raw.match(/HTTP\/1\.1 /g)?.length, 1, `one answer only: ${raw}`);
    }
  });

  it('sends 100 Continue before reading a valid creation, then creates it', async () => {
    const body = JSON.stringify({ name: 'Continue test', barcode: uniqueBarcode(), price: '1.00' });
    const raw = await continueExchange(
      ctx.server.url,
      `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nExpect: 100-continue\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      body,
    );
    assert.match(raw, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });

  it('refuses an Expect that asks for more than 100-continue with a 417', async () => {
    for (const expect of ['Expect: 100-continue, foo\r\n', 'Expect: 100-continue\r\nExpect: foo\r\n', 'Expect: foo, 100-continue\r\n']) {
      const raw = await rawExchange(ctx.server.url, `GET /healthz HTTP/1.1\r\nHost: shop.example\r\n${expect}X-Request-Id: odd-expect\r\n\r\n`, 3000);
      assert.match(raw, /^HTTP\/1\.1 417 /, expect);
      assert.match(raw.toLowerCase(), /\r\nconnection: close\r\n/);
      assert.match(raw.toLowerCase(), /\r\nx-request-id: odd-expect\r\n/);
      assert.match(raw, /"status":417/);
    }
  });

  it('runs no create pipelined behind a 417, first on its connection or behind another create', async () => {
    const create = (barcode: string, expect = ''): string => {
      const body = `{"name": "Behind a 417", "barcode": "${barcode}", "price": "1.00"}`;
      return `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n${expect}Content-Length: ${body.length}\r\n\r\n${body}`;
    };
    for (const ahead of [false, true]) {
      const [first, refused, behind] = [uniqueBarcode(), uniqueBarcode(), uniqueBarcode()];
      const raw = await rawExchange(ctx.server.url, (ahead ? create(first) : '') + create(refused, 'Expect: 100-continue, foo\r\n') + create(behind), 3000);
      assert.deepEqual(raw.match(/HTTP\/1\.1 \d{3}/g), [...(ahead ? ['HTTP/1.1 201'] : []), 'HTTP/1.1 417'], `a create ahead: ${ahead}`);
      // Had the create behind run, it would have been stored as the connection closed: give it the time.
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (const [barcode, stored] of [[first, ahead], [refused, false], [behind, false]] as const) {
        const listed = await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`);
        assert.equal((listed.json as unknown[]).length, stored ? 1 : 0, `${barcode === first ? 'the create ahead' : barcode === refused ? 'the refused create' : 'the create behind'} (a create ahead: ${ahead})`);
      }
    }
  });
});
