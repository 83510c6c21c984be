import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
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
});
