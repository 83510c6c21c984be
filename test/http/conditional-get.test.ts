import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';

describeEachStore('conditional GET', (ctx) => {
  const strongTag = /^"[A-Za-z0-9_-]+"$/;

  it('tags a product and answers 304 without a body while the tag matches', async () => {
    const product = await createProduct(ctx.server.url);
    const url = `${ctx.server.url}/api/v1/shop/product/${product.pk}`;
    const first = await send(url);
    assert.equal(first.status, 200);
    assert.deepEqual(first.json, product);
    const etag = first.headers.etag;
    assert.match(etag ?? '', strongTag);

    const again = await send(url);
    assert.equal(again.headers.etag, etag);

    const notModified = await send(url, { headers: { 'If-None-Match': etag! } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.text, '');
    assert.equal(notModified.headers.etag, etag);

    for (const header of [`"other", ${etag}`, `W/${etag}`, '*']) {
      assert.equal((await send(url, { headers: { 'If-None-Match': header } })).status, 304, header);
    }
    const changed = await send(url, { headers: { 'If-None-Match': '"something-else"' } });
    assert.equal(changed.status, 200);
    assert.deepEqual(changed.json, product);
  });

  it('answers HEAD with the same tag and 304 as GET', async () => {
    const product = await createProduct(ctx.server.url);
    const url = `${ctx.server.url}/api/v1/shop/product/${product.pk}`;
    const { headers } = await send(url);
    const head = await send(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.etag, headers.etag);
    const notModified = await send(url, { method: 'HEAD', headers: { 'If-None-Match': headers.etag! } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.text, '');
    // A 304 may state a length only if it is the 200's own (RFC 9110 §8.6); a GET's 304 states none.
    assert.equal(notModified.headers['content-length'], headers['content-length']);
    // Its type is the 200's, never a bare body's text/plain, which a cache updating from it would keep.
    assert.equal(notModified.headers['content-type'], headers['content-type']);
    const getNotModified = await send(url, { headers: { 'If-None-Match': headers.etag! } });
    assert.equal(getNotModified.headers['content-length'], undefined);
  });

  it('gives each page a tag that every write changes', async () => {
    await createProduct(ctx.server.url);
    const url = `${ctx.server.url}/api/v2/shop/products?limit=1`;
    const before = await send(url);
    assert.equal(before.status, 200);
    const etag = before.headers.etag!;
    assert.match(etag, strongTag);
    const notModified = await send(url, { headers: { 'If-None-Match': etag } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.text, '');

    // A product past this page still changes its count, so its bytes and its tag.
    await createProduct(ctx.server.url);
    const after = await send(url, { headers: { 'If-None-Match': etag } });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.etag, etag);
    const beforeBody = before.json as { count: number };
    assert.equal((after.json as { count: number }).count, beforeBody.count + 1);
  });

  it('tags different pages differently', async () => {
    await createProduct(ctx.server.url);
    await createProduct(ctx.server.url);
    const one = await send(`${ctx.server.url}/api/v2/shop/products?limit=1`);
    const two = await send(`${ctx.server.url}/api/v2/shop/products?limit=1&offset=1`);
    assert.notEqual(one.headers.etag, two.headers.etag);
    assert.notDeepEqual(one.json, two.json);
  });

  it('tags the v1 list and its matches, answers 304 to their own tags, and a write changes them', async () => {
    const product = await createProduct(ctx.server.url);
    for (const url of [`${ctx.server.url}/api/v1/shop/products`, `${ctx.server.url}/api/v1/shop/products?barcode=${product.barcode}`]) {
      const first = await send(url);
      assert.equal(first.status, 200);
      const etag = first.headers.etag!;
      assert.match(etag, strongTag, url);
      // The first answer, read from the database, is tagged as the kept one is.
      assert.equal((await send(url)).headers.etag, etag, url);
      const notModified = await send(url, { headers: { 'If-None-Match': etag } });
      assert.equal(notModified.status, 304, url);
      assert.equal(notModified.text, '');
      const head = await send(url, { method: 'HEAD', headers: { 'If-None-Match': etag } });
      assert.equal(head.status, 304, url);
      assert.equal(head.headers['content-type'], 'application/json; charset=utf-8', url);

      await createProduct(ctx.server.url);
      const after = await send(url, { headers: { 'If-None-Match': etag } });
      // The whole list changed; the matches did not, but the catalogue's generation did: same bytes, same tag.
      if (url.includes('barcode=')) assert.equal(after.status, 304, url);
      else {
        assert.equal(after.status, 200, url);
        assert.notEqual(after.headers.etag, etag);
        assert.deepEqual((after.json as unknown[]).length, (first.json as unknown[]).length + 1);
      }
    }
  });

  it('serves a cached page only while the catalogue is unchanged', async () => {
    const url = `${ctx.server.url}/api/v2/shop/products?limit=1000`;
    const first = (await send(url)).json as { count: number; results: unknown[] };
    const created = await createProduct(ctx.server.url);
    const second = (await send(url)).json as { count: number; results: Array<{ barcode: string }> };
    assert.equal(second.count, first.count + 1);
    assert.equal(second.results.at(-1)?.barcode, created.barcode);
  });
});

describeEachStore('conditional GET, page-number style', { env: { PAGINATION: 'page-number' } }, (ctx) => {
  it('tags pages, answers 304, and a write changes the tag', async () => {
    await createProduct(ctx.server.url);
    const url = `${ctx.server.url}/api/v2/shop/products?page=last`;
    const first = await send(url);
    assert.equal(first.status, 200);
    assert.equal((await send(url, { headers: { 'If-None-Match': first.headers.etag! } })).status, 304);
    await createProduct(ctx.server.url);
    const after = await send(url, { headers: { 'If-None-Match': first.headers.etag! } });
    assert.equal(after.status, 200);
    assert.equal((after.json as { count: number }).count, (first.json as { count: number }).count + 1);
  });
});
