import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { createProduct } from '../helpers/products.js';

interface Page {
  count: number;
  next: string | null;
  previous: string | null;
  results: Array<{ name: string; price: string; barcode: string }>;
}

const PRODUCTS = 25;
const item = (p: { name: string; price: string; barcode: string }) => ({ name: p.name, price: p.price, barcode: p.barcode });

async function getPage(url: string): Promise<Page> {
  const res = await send(url);
  assert.equal(res.status, 200, `${url}: ${res.text}`);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  assert.deepEqual(Object.keys(res.json as object), ['count', 'next', 'previous', 'results']);
  return res.json as Page;
}

async function badParameter(url: string, parameter: string) {
  const res = await send(url);
  assert.equal(res.status, 400, url);
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  const body = res.json as { status: number; errors: Record<string, string[]> };
  assert.equal(body.status, 400);
  assert.deepEqual(Object.keys(body.errors), [parameter], url);
}

describeEachStore('v2 limit/offset pagination', { env: { PAGE_SIZE: '10', MAX_LIMIT: '20' } }, (ctx) => {
  let products: Array<{ name: string; price: string; barcode: string }>;
  let api: string;
  before(async () => {
    api = `${ctx.server.url}/api/v2/shop/products`;
    const empty = await getPage(api);
    assert.deepEqual(empty, { count: 0, next: null, previous: null, results: [] });
    products = [];
    for (let i = 0; i < PRODUCTS; i++) products.push(item(await createProduct(ctx.server.url, { name: `Item ${i}`, price: `${i}.50` })));
  });

  it('serves the first page with the configured page size and exact links', async () => {
    assert.deepEqual(await getPage(api), {
      count: PRODUCTS,
      next: `${api}?limit=10&offset=10`,
      previous: null,
      results: products.slice(0, 10),
    });
  });

  it('writes previous without offset when it would be 0 or less, and next null at the end', async () => {
    assert.deepEqual(await getPage(`${api}?limit=10&offset=5`), {
      count: PRODUCTS,
      next: `${api}?limit=10&offset=15`,
      previous: `${api}?limit=10`,
      results: products.slice(5, 15),
    });
    assert.deepEqual(await getPage(`${api}?offset=20&limit=10`), {
      count: PRODUCTS,
      next: null,
      previous: `${api}?limit=10&offset=10`,
      results: products.slice(20),
    });
  });

  it('keeps the other query parameters in the links, and the trailing slash of the request', async () => {
    const page = await getPage(`${ctx.server.url}/api/v2/shop/products/?zeta=1&limit=5&alpha=x+y`);
    assert.equal(page.next, `${ctx.server.url}/api/v2/shop/products/?alpha=x+y&limit=5&offset=5&zeta=1`);
    assert.equal(page.previous, null);
  });

  it('lowers a limit above the maximum to it, and the links carry it', async () => {
    const page = await getPage(`${api}?limit=500`);
    assert.equal(page.results.length, 20);
    assert.equal(page.next, `${api}?limit=20&offset=20`);
    // Past 2^53 - 1 whatever the number of digits (16 digits can pass it), or with zeros before (still small).
    for (const limit of ['99999999999999999999999', '9007199254740993', '9999999999999999']) assert.equal((await getPage(`${api}?limit=${limit}`)).results.length, 20, limit);
    assert.equal((await getPage(`${api}?limit=00000000000000000003`)).results.length, 3);
  });

  it('answers an offset past the end with 200 and no results', async () => {
    assert.deepEqual(await getPage(`${api}?offset=1000`), {
      count: PRODUCTS,
      next: null,
      previous: `${api}?limit=10&offset=990`,
      results: [],
    });
  });

  it('visits every product exactly once by following next from the first page', async () => {
    for (const limit of [1, 7, 10, 20]) {
      const seen = [];
      let url: string | null = `${api}?limit=${limit}`;
      while (url !== null) {
        const page: Page = await getPage(url);
        seen.push(...page.results);
        url = page.next;
      }
      assert.deepEqual(seen, products, `limit=${limit}`);
    }
  });

  it('treats empty parameters as absent and ignores unknown ones', async () => {
    assert.deepEqual((await getPage(`${api}?limit=&offset=&page=3&format=json`)).results, products.slice(0, 10));
  });

  for (const query of ['limit=abc', 'limit=0', 'limit=1e2', 'limit=10abc', 'limit=-1', 'limit=1.5', 'limit=%201', 'limit=1&limit=2']) {
    it(`answers 400 naming limit for ${query}`, () => badParameter(`${api}?${query}`, 'limit'));
  }
  for (const query of ['offset=-1', 'offset=abc', 'offset=1e2', 'offset=0x10', 'offset=99999999999999999999']) {
    it(`answers 400 naming offset for ${query}`, () => badParameter(`${api}?${query}`, 'offset'));
  }
});

describeEachStore('v2 page-number pagination', { env: { PAGINATION: 'page-number' } }, (ctx) => {
  let products: Array<{ name: string; price: string; barcode: string }>;
  let api: string;
  before(async () => {
    api = `${ctx.server.url}/api/v2/shop/products`;
    assert.deepEqual(await getPage(api), { count: 0, next: null, previous: null, results: [] });
    products = [];
    for (let i = 0; i < PRODUCTS; i++) products.push(item(await createProduct(ctx.server.url, { name: `Item ${i}` })));
  });

  it('serves page 1 of 10 items, whatever page_size says', async () => {
    const expected = { count: PRODUCTS, next: `${api}?page=2`, previous: null, results: products.slice(0, 10) };
    assert.deepEqual(await getPage(api), expected);
    assert.deepEqual(await getPage(`${api}?page=`), expected);
    assert.deepEqual((await getPage(`${api}?page_size=3`)).results, products.slice(0, 10));
  });

  it('omits page from previous on page 2', async () => {
    assert.deepEqual(await getPage(`${api}?page=2`), {
      count: PRODUCTS,
      next: `${api}?page=3`,
      previous: api,
      results: products.slice(10, 20),
    });
  });

  it('serves page=last, and the last page has no next', async () => {
    const expected = { count: PRODUCTS, next: null, previous: `${api}?page=2`, results: products.slice(20) };
    assert.deepEqual(await getPage(`${api}?page=last`), expected);
    assert.deepEqual(await getPage(`${api}?page=3`), expected);
  });

  it('keeps other parameters in the links', async () => {
    const page = await getPage(`${api}?q=tea&page=2`);
    assert.equal(page.next, `${api}?page=3&q=tea`);
    assert.equal(page.previous, `${api}?q=tea`);
  });

  it('visits every product exactly once by following next', async () => {
    const seen = [];
    let url: string | null = api;
    while (url !== null) {
      const page: Page = await getPage(url);
      seen.push(...page.results);
      url = page.next;
    }
    assert.deepEqual(seen, products);
  });

  it('answers 404 with a problem document for a page past the last', async () => {
    const res = await send(`${api}?page=4`);
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, {
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'Page 4 does not exist; the last page is 3.',
    });
    // A page past 2^53 - 1 is past the last too, however it is written; a small one with zeros before is itself.
    for (const page of ['9007199254740992', '9007199254740993', '9999999999999999', '99999999999999999999999']) {
      const huge = await send(`${api}?page=${page}`);
      assert.deepEqual([huge.status, (huge.json as { detail: string }).detail], [404, `Page ${page} does not exist; the last page is 3.`]);
    }
    assert.equal((await send(`${api}?page=00000000000000000002`)).status, 200);
  });

  for (const query of ['page=0', 'page=1.5', 'page=abc', 'page=-1', 'page=1e1', 'page=LAST', 'page=1&page=2']) {
    it(`answers 400 naming page for ${query}`, () => badParameter(`${api}?${query}`, 'page'));
  }
});
