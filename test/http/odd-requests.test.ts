import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { databaseUrl, spawnServer } from '../helpers/child-server.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { exchangeWhileSending, rawExchange, resetAwareExchange } from '../helpers/raw-socket.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const PROBLEM = 'application/problem+json; charset=utf-8';

function problemOf(raw: string): { status: number; headers: string; body: { status: number; detail: string } } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) as { status: number; detail: string } };
}

describeEachStore('odd and hostile requests', { env: { PAGE_SIZE: '1' } }, (ctx) => {
  let pk: number;
  before(async () => {
    pk = (await createProduct(ctx.server.url)).pk;
    await createProduct(ctx.server.url);
  });

  it('refuses a Host header that is no host name with a 400 problem, never a 500', async () => {
    for (const host of ['a b', 'a{b}', 'a"b', 'café.example', 'evil.example/foo?x=', 'a:99999', 'a:65536', 'a:0', 'a..b', '.a', 'shop.example..']) {
      const res = await send(`${ctx.server.url}/api/v2/shop/products?limit=1`, { headers: { Host: host, 'X-Request-Id': 'odd-host' } });
      assert.equal(res.status, 400, host);
      assert.equal(res.headers['content-type'], PROBLEM);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal(res.headers['x-request-id'], 'odd-host');
      assert.deepEqual(res.json, {
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail: 'The Host header is not a valid host name and port.',
      });
    }
  });

  it('refuses an HTTP/1.1 request without Host with a 400 problem carrying the usual headers', async () => {
    for (const path of ['/healthz', `/api/v1/shop/product/${pk}`, '/', '/nowhere']) {
      const raw = await rawExchange(ctx.server.url, `GET ${path} HTTP/1.1\r\nX-Request-Id: no-host\r\nConnection: close\r\n\r\n`);
      const answer = problemOf(raw);
      assert.equal(answer.status, 400, path);
      assert.match(answer.headers, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/);
      assert.match(answer.headers, /\r\naccess-control-allow-origin: \*\r\n/);
      assert.match(answer.headers, /\r\nx-request-id: no-host\r\n/);
      assert.deepEqual(answer.body, { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'The request has no Host header.' });
    }
    // HTTP/1.0 needs no Host: its links name the address the request arrived on.
    const raw = await rawExchange(ctx.server.url, 'GET /api/v2/shop/products?limit=1 HTTP/1.0\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 200 /);
    assert.equal((JSON.parse(raw.split('\r\n\r\n')[1]!) as { next: string }).next, `${ctx.server.url}/api/v2/shop/products?limit=1&offset=1`);
  });

  it('refuses an Expect other than 100-continue with a 417 problem carrying the usual headers', async () => {
    const raw = await rawExchange(
      ctx.server.url,
      `GET /healthz HTTP/1.1\r\nHost: shop.example\r\nExpect: foo\r\nX-Request-Id: odd-expect\r\nOrigin: https://till.example\r\n\r\n`,
    );
    const answer = problemOf(raw);
    assert.equal(answer.status, 417);
    assert.match(answer.headers, /\r\ncontent-type: application\/problem\+json; charset=utf-8\r\n/);
    assert.match(answer.headers, /\r\naccess-control-allow-origin: \*\r\n/);
    assert.match(answer.headers, /\r\nx-request-id: odd-expect\r\n/);
    assert.match(answer.headers, /\r\nconnection: close\r\n/);
    assert.deepEqual(answer.body, {
      type: 'about:blank',
      title: 'Expectation Failed',
      status: 417,
      detail: 'The Expect header asks for what this service does not do; the one expectation it meets is 100-continue.',
    });

    // 100-continue is met: the client is told to go on, and the product is created.
    const body = JSON.stringify({ name: 'Expect test', barcode: uniqueBarcode(), price: '1.00' });
    const created = await rawExchange(
      ctx.server.url,
      `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.match(created, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });

  it('reads every header, however many come before it within the 16 KiB of headers', async () => {
    // Node hands a listener 2,000 headers by default and drops the rest without a word.
    const padding = 'a:b\r\n'.repeat(2100);
    const barcode = uniqueBarcode();
    const body = JSON.stringify({ name: 'After many headers', barcode, price: '1.00' });
    const coded = await rawExchange(
      ctx.server.url,
      `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${padding}Content-Encoding: gzip\r\n\r\n${body}`,
    );
    assert.equal(problemOf(coded).status, 415, coded.slice(0, 200));
    assert.deepEqual((await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`)).json, []);

    const twoHosts = await rawExchange(ctx.server.url, `GET /healthz HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n${padding}Host: evil.example\r\n\r\n`);
    assert.deepEqual(problemOf(twoHosts).body.detail, 'The request has more than one Host header.');

    // An Upgrade gets its ordinary answer, and the connection is closed after it: the request behind it is not read.
    const upgrade = await rawExchange(ctx.server.url, `GET /healthz HTTP/1.1\r\nHost: shop.example\r\n${padding}Upgrade: websocket\r\nConnection: upgrade\r\n\r\nGET /healthz HTTP/1.1\r\nHost: shop.example\r\n\r\n`);
    assert.equal(upgrade.match(/HTTP\/1\.1 /g)?.length, 1, upgrade);
    assert.match(upgrade.toLowerCase(), /^http\/1\.1 200 [^]*\r\nconnection: close\r\n/);
  });

  it('refuses a second Content-Type or Authorization as it does a second Host, creating nothing', async () => {
    for (const [twice, name] of [
      ['Content-Type: application/json\r\nContent-Type: text/plain', 'Content-Type'],
      ['Content-Type: application/json\r\nAuthorization: Bearer a\r\nauthorization: Bearer b', 'Authorization'],
    ] as const) {
      const barcode = uniqueBarcode();
      const body = JSON.stringify({ name: 'Sent with two', barcode, price: '1.00' });
      const raw = await rawExchange(ctx.server.url, `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\n${twice}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      const answer = problemOf(raw);
      assert.equal(answer.status, 400, raw.slice(0, 300));
      assert.equal(answer.body.detail, `The request has more than one ${name} header.`);
      assert.deepEqual((await send(`${ctx.server.url}/api/v1/shop/products?barcode=${barcode}`)).json, []);
    }
    // A kept answer too is the routes' refusal, not the answer kept.
    const kept = `/api/v1/shop/product/${pk}`;
    assert.equal((await send(`${ctx.server.url}${kept}`)).status, 200);
    const raw = await rawExchange(ctx.server.url, `GET ${kept} HTTP/1.1\r\nHost: shop.example\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nConnection: close\r\n\r\n`);
    assert.equal(problemOf(raw).status, 400);
  });

  it('builds links from an absolute-form request target', async () => {
    const raw = await rawExchange(
      ctx.server.url,
      'GET http://shop.example:8080/api/v2/shop/products?limit=1 HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n',
    );
    const body = JSON.parse(raw.split('\r\n\r\n')[1]!) as { next: string };
    assert.equal(body.next, 'http://shop.example:8080/api/v2/shop/products?limit=1&offset=1');
  });

  it('accepts a host name ending in the root dot and the highest port', async () => {
    for (const host of ['shop.example.', 'shop.example:65535', '[::1]:1']) {
      const res = await send(`${ctx.server.url}/api/v2/shop/products?limit=1`, { headers: { Host: host } });
      assert.equal(res.status, 200, host);
      assert.equal((res.json as { next: string }).next, `http://${host}/api/v2/shop/products?limit=1&offset=1`);
    }
  });

  it('writes no link from an absolute-form target whose host or port is not valid', async () => {
    const get = (authority: string) =>
      rawExchange(ctx.server.url, `GET http://${authority}/api/v2/shop/products?limit=1 HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n`);
    for (const authority of ['shop..example', 'shop.example:99999']) {
      const answer = problemOf(await get(authority));
      assert.equal(answer.status, 400, authority);
      assert.equal(answer.body.detail, 'The request target does not name a valid host.', authority);
    }
    // Where no URL parser reads the target, the router refuses it before any route: the same 400, and nothing created.
    const body = JSON.stringify({ name: 'Never stored', barcode: uniqueBarcode(), price: '1.00' });
    const create = await rawExchange(
      ctx.server.url,
      `POST http://shop.example:99999/api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.equal(problemOf(create).status, 400);
    assert.deepEqual((await send(`${ctx.server.url}/api/v1/shop/products?barcode=${(JSON.parse(body) as { barcode: string }).barcode}`)).json, []);
  });

  it('answers a path that cannot be decoded with a 404 problem carrying CORS', async () => {
    for (const path of ['/api/v1/shop/product/%ZZ', '/api/v1/shop/product/%C0%AF', '/api/v2/shop/products%']) {
      const res = await send(`${ctx.server.url}${path}`);
      assert.equal(res.status, 404, path);
      assert.equal(res.headers['content-type'], PROBLEM);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal((res.json as { detail: string }).detail, 'There is nothing at this address: its path is not valid percent-encoding of UTF-8 text.', path);
    }
  });

  it('answers an over-long pk with a 404 problem', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/product/${'1'.repeat(500)}`);
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], PROBLEM);
    assert.equal((res.json as { detail: string }).detail, 'There is nothing at this address: a part of its path is longer than any this service reads (200 characters).');
  });

  it('reads a pk written with leading zeros', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/product/${String(pk).padStart(20, '0')}`);
    assert.equal(res.status, 200);
    assert.equal((res.json as { pk: number }).pk, pk);
  });

  it('answers 405 to WebDAV and other registered methods too', async () => {
    for (const method of ['PROPFIND', 'SEARCH', 'PURGE', 'QUERY']) {
      const res = await send(`${ctx.server.url}/api/v1/shop/product/${pk}`, { method });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
    }
  });

  it('answers what the HTTP parser refuses with a problem document', async () => {
    const unknown = problemOf(await rawExchange(ctx.server.url, 'FOO /api/v1/shop/products HTTP/1.1\r\nHost: x\r\n\r\n'));
    assert.equal(unknown.status, 400);
    assert.match(unknown.headers, /content-type: application\/problem\+json/);
    assert.equal(unknown.body.status, 400);
    const huge = problemOf(await rawExchange(ctx.server.url, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`));
    assert.equal(huge.status, 431);
    assert.equal(huge.body.status, 431);
    // A character typed into the address as it is, unencoded, is named as what it is.
    const typed = problemOf(await rawExchange(ctx.server.url, Buffer.from('GET /api/v2/shop/products?search=Ｎutella HTTP/1.1\r\nHost: x\r\n\r\n')));
    assert.equal(typed.status, 400);
    assert.equal(typed.body.detail, 'The request target holds a character a URL may not (a space, a control character or a byte outside ASCII); percent-encode it (é as %C3%A9).');
  });

  it('refuses a request line of another HTTP version than 1.x with a 400 problem, and closes the connection', async () => {
    // Node's parser refuses HTTP/1.2 and HTTP/3.0 itself, and takes these two.
    for (const version of ['HTTP/2.0', 'HTTP/0.9']) {
      const raw = await rawExchange(ctx.server.url, `GET /api/v1/shop/product/${pk} ${version}\r\nHost: shop.example\r\n\r\nGET /api/v1/shop/product/${pk} HTTP/1.1\r\nHost: shop.example\r\n\r\n`);
      assert.equal(raw.match(/^HTTP\/1\.1 /gm)?.length, 1, `${version}: one answer, then the connection is closed`);
      const refused = problemOf(raw);
      assert.equal(refused.status, 400, version);
      assert.equal(refused.body.detail, `The request is ${version}; this service speaks HTTP/1.1 (and 1.0).`);
      assert.match(refused.headers, /^x-request-id: /m);
      assert.match(refused.headers, /^connection: close/m);
    }
  });

  it('closes the connection after a refusal without a reset while the client is still sending', async () => {
    // The server's end first, and the connection dropped only a moment later: dropped at once, with the
    // client's bytes still arriving, it is reset, and a reset can make the client's system discard the
    // refusal before it is read.
    for (const [head, status] of [
      [`POST /api/v1/shop/product/ HTTP/2.0\r\nHost: shop.example\r\nContent-Type: application/json\r\n\r\n`, 400],
      [`GET /api/v1/shop/product/${pk} HTTP/0.9\r\nHost: shop.example\r\n\r\n`, 400],
      ['POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nExpect: foo\r\nContent-Type: application/json\r\nContent-Length: 9999999\r\n\r\n', 417],
      ['GET /api/v1/shop/products HTTP/1.1\r\nHost: shop.example\r\nTransfer-Encoding: gzip, chunked\r\n\r\n', 400],
    ] as const) {
      const { answer, reset } = await exchangeWhileSending(ctx.server.url, head);
      assert.equal(problemOf(answer).status, status, head.split('\r\n')[0]);
      assert.equal(reset, false, `${head.split('\r\n')[0]}: reset`);
    }
  });

  it('refuses a GET whose body comes in a transfer coding other than chunked, and closes the connection', async () => {
    // The chunked body holds what looks like a request; the GET after it is on the same connection.
    const raw = await rawExchange(
      ctx.server.url,
      `GET /api/v1/shop/product/${pk} HTTP/1.1\r\nHost: shop.example\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nGET /\r\n0\r\n\r\n` +
        `GET /api/v1/shop/product/${pk} HTTP/1.1\r\nHost: shop.example\r\n\r\n`,
    );
    assert.equal(raw.match(/^HTTP\/1\.1 /gm)?.length, 1, 'one answer, then the connection is closed');
    const refused = problemOf(raw);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.detail, 'The transfer coding gzip is not supported; send the body with Content-Length or chunked alone.');
    assert.match(refused.headers, /^x-request-id: /m);
  });

  it('closes the connection after a 431 for a request line far past the limit without a reset', async (t) => {
    // In a process of its own: in the test's process the client's writes and the server's reads
    // share one event loop, and the server has read every byte by the time it refuses.
    const database = await ctx.freshDatabase(t);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(database.location), WORKERS: '1' });
    t.after(() => server.stop());
    // The parser stops reading at the limit: a connection closed at once with the rest of the 100 KB
    // line unread is reset, and a reset makes the client's system discard what it has not read yet, the
    // refusal too. Ten times: whether bytes are still unread when the refusal is written is up to timing.
    for (let i = 0; i < 10; i++) {
      const { answer, reset } = await resetAwareExchange(server.url, `GET /${'a'.repeat(100_000)} HTTP/1.1\r\nHost: shop.example\r\n\r\n`);
      assert.equal(reset, false, `attempt ${i + 1}`);
      assert.equal(problemOf(answer).status, 431);
    }
  });

  it('says a top-level JSON number is not an object', async () => {
    const res = await postJson(`${ctx.server.url}/api/v1/shop/product/`, '42');
    assert.equal(res.status, 400);
    assert.equal((res.json as { detail: string }).detail, 'The body must be a JSON object with name, barcode and price.');
  });

  it('answers a preflight 200 whatever body it carries', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/products`, { method: 'OPTIONS', headers: { 'Content-Type': 'text/plain' }, body: 'x' });
    assert.equal(res.status, 200);
  });
});

describe('page-number style, odd pages', () => {
  let server: RunningServer;
  before(async () => {
    server = await startFreshServer(sqlite, { PAGINATION: 'page-number' });
  });
  after(() => server.stop());

  it('answers a page number too large to hold exactly with 404, naming it as written', async () => {
    const res = await send(`${server.url}/api/v2/shop/products?page=99999999999999999999`);
    assert.equal(res.status, 404);
    assert.equal((res.json as { detail: string }).detail, 'Page 99999999999999999999 does not exist; the last page is 1.');
  });
});
