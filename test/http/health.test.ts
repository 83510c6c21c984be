import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';

const JSON_TYPE = 'application/json; charset=utf-8';

describeEachStore('health probes', (ctx) => {
  for (const [path, body] of [
    ['/healthz', { status: 'ok' }],
    ['/readyz', { status: 'ready' }],
  ] as const) {
    it(`answers GET ${path} with ${body.status}, and HEAD without a body`, async () => {
      const res = await send(`${ctx.server.url}${path}`);
      assert.deepEqual([res.status, res.headers['content-type'], res.json], [200, JSON_TYPE, body]);
      const head = await send(`${ctx.server.url}${path}`, { method: 'HEAD' });
      assert.deepEqual([head.status, head.text], [200, '']);
    });

    it(`answers OPTIONS ${path} and refuses other methods with 405`, async () => {
      assert.equal((await send(`${ctx.server.url}${path}`, { method: 'OPTIONS' })).status, 200);
      const res = await send(`${ctx.server.url}${path}`, { method: 'POST' });
      assert.equal(res.status, 405);
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
    });
  }
});
