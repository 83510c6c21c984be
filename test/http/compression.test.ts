import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';

const DECODE = { gzip: gunzipSync, br: brotliDecompressSync } as const;

describeEachStore('compressed answers', (ctx) => {
  let pk = 0;
  before(async () => {
    for (let i = 0; i < 20; i++) pk = (await createProduct(ctx.server.url, { name: `Compressible product number ${i}` })).pk;
  });

  for (const coding of ['gzip', 'br'] as const) {
    for (const path of ['/api/v2/shop/products?limit=100', '/api/v1/shop/products']) {
      it(`${path} in ${coding} decodes to exactly the identity body, the first answer and a cached one`, async () => {
        const identity = await send(`${ctx.server.url}${path}`);
        assert.equal(identity.headers['content-encoding'], undefined);
        assert.match(identity.headers.vary ?? '', /Accept-Encoding/);
        for (let i = 0; i < 2; i++) {
          const encoded = await send(`${ctx.server.url}${path}`, { headers: { 'Accept-Encoding': `${coding}, deflate` } });
          assert.equal(encoded.status, 200);
          assert.equal(encoded.headers['content-encoding'], coding);
          assert.match(encoded.headers.vary ?? '', /Accept-Encoding/);
          assert.ok(encoded.bytes.length < identity.bytes.length / 2);
          assert.deepEqual(DECODE[coding](encoded.bytes), identity.bytes);
        }
      });
    }

    it(`tags the ${coding} page apart from the identity page, and answers 304 to its own tag`, async () => {
      const url = `${ctx.server.url}/api/v2/shop/products?limit=100`;
      const headers = { 'Accept-Encoding': coding };
      const identity = await send(url);
      const encoded = await send(url, { headers });
      assert.ok(encoded.headers.etag !== undefined && identity.headers.etag !== undefined);
      assert.notEqual(encoded.headers.etag, identity.headers.etag);

      const notModified = await send(url, { headers: { ...headers, 'If-None-Match': encoded.headers.etag } });
      assert.equal(notModified.status, 304);
      assert.equal(notModified.headers.etag, encoded.headers.etag);
      assert.equal(notModified.text, '');
      // The identity body is another representation: its client gets it whole.
      const other = await send(url, { headers: { 'If-None-Match': encoded.headers.etag } });
      assert.equal(other.status, 200);
      assert.deepEqual(other.bytes, identity.bytes);
    });
  }

  it('sends a body under 1 KB as it is, whatever the client accepts', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/product/${pk}`, { headers: { 'Accept-Encoding': 'gzip, br' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal((res.json as { pk: number }).pk, pk);
  });

  it('honours q-values, and q=0 refuses a coding', async () => {
    const url = `${ctx.server.url}/api/v2/shop/products?limit=100`;
    const pick = async (accept: string) => (await send(url, { headers: { 'Accept-Encoding': accept } })).headers['content-encoding'];
    assert.equal(await pick('gzip;q=1, br;q=0.5'), 'gzip');
    assert.equal(await pick('gzip, br'), 'br');
    assert.equal(await pick('br;q=0, gzip'), 'gzip');
    assert.equal(await pick('*'), 'br');
    assert.equal(await pick('gzip;q=0, br;q=0'), undefined);
    assert.equal(await pick('identity'), undefined);
  });
});
