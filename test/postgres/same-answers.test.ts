import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postJson, send, type RawResponse } from '../helpers/http.js';
import { SEARCH_BOUND_TERMS, searchBoundCatalogue } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { STORES, postgres } from '../helpers/stores.js';
import type { NewProduct } from '../../src/catalogue/product.js';

/** One scripted request; the same script runs against every database. */
type Step = readonly [label: string, run: (url: string) => Promise<RawResponse>];

const create =
  (body: object, headers: Record<string, string> = {}): Step[1] =>
  (url) =>
    postJson(`${url}/api/v1/shop/product/`, JSON.stringify(body), headers);
const get = (path: string): Step[1] => (url) => send(`${url}${path}`);

const SCRIPT: readonly Step[] = [
  ['empty list', get('/api/v1/shop/products')],
  ['empty page', get('/api/v2/shop/products')],
  ['create', create({ name: 'Espresso 1 kg', barcode: '4006381333931', price: '12.99' })],
  ['create with a number price', create({ name: '  Crème brûlée « maison » 🍮  ', barcode: '3017620422003', price: 0.5 })],
  ['duplicate barcode', create({ name: 'Again', barcode: '4006381333931', price: '1.00' })],
  ['create after a conflict', create({ name: 'Tea', barcode: '5000112637922', price: '9999999999.99' })],
  ['keyed duplicate barcode', create({ name: 'Keyed again', barcode: '4006381333931', price: '1.00' }, { 'Idempotency-Key': 'same-answers-1' })],
  ['create after a keyed conflict', create({ name: 'Honey', barcode: '8712345678906', price: '4.20' })],
  ['invalid product', create({ name: '', barcode: '4006381333932', price: '-1' })],
  ['create after a refusal', create({ name: 'Zero', barcode: '0000000000000', price: '0' })],
  ['one product', get('/api/v1/shop/product/2')],
  ['missing product', get('/api/v1/shop/product/99')],
  ['whole list', get('/api/v1/shop/products')],
  ['first page', get('/api/v2/shop/products?limit=2')],
  ['second page', get('/api/v2/shop/products?limit=2&offset=2')],
  ['page past the end', get('/api/v2/shop/products?offset=50')],
  ['bad limit', get('/api/v2/shop/products?limit=0')],
  ['create in another script', create({ name: '寿司 セット 🍣', barcode: '4901234567894', price: '8.00' })],
  ['create with pattern characters', create({ name: '100% Äpfel_Saft', barcode: '4000417025005', price: '2.49' })],
  ['create a UPC-A product', create({ name: 'Cola can', barcode: '0036000291452', price: '1.20' })],
  ['barcode', get('/api/v1/shop/products?barcode=4006381333931')],
  ['UPC-A barcode', get('/api/v1/shop/products?barcode=036000291452')],
  ['unknown barcode', get('/api/v2/shop/products?barcode=5449000000996')],
  ['bad barcode', get('/api/v1/shop/products?barcode=4006381333932')],
  ['search folded', get('/api/v1/shop/products?search=CREME%20BRULEE')],
  ['search one letter', get('/api/v2/shop/products?search=e&limit=2')],
  ['search next page', get('/api/v2/shop/products?search=e&limit=2&offset=2')],
  ['search CJK', get('/api/v1/shop/products?search=%E5%AF%BF%E5%8F%B8')],
  ['search emoji', get('/api/v1/shop/products?search=%F0%9F%8D%AE')],
  ['search percent', get('/api/v1/shop/products?search=%25')],
  ['search underscore', get('/api/v2/shop/products?search=l_s')],
  ['search no match', get('/api/v2/shop/products?search=zzz')],
  ['both filters', get('/api/v2/shop/products?search=tea&barcode=5000112637922')],
  ['search too long', get(`/api/v1/shop/products?search=${'x'.repeat(101)}`)],
  ['search twice', get('/api/v2/shop/products?search=a&search=b')],
  ['readiness', get('/readyz')],
];

const BOUND_CATALOGUE = searchBoundCatalogue();
const BOUND_TERMS = SEARCH_BOUND_TERMS.map(([term]) => term);

const BOUND_LIMIT_OFFSET: readonly Step[] = BOUND_TERMS.flatMap((term): Step[] =>
  [[0, 10], [990, 10], [999, 2], [1_000, 10], [0, 1_000], [1_500, 100]].map(([offset, limit]) => [`${term} at ${offset}, ${limit}`, get(`/api/v2/shop/products?search=${term}&limit=${limit}&offset=${offset}`)]),
);

const BOUND_PAGE_NUMBER: readonly Step[] = BOUND_TERMS.flatMap((term): Step[] =>
  ['1', '100', '101', '102', 'last'].map((page) => [`${term}, page ${page}`, get(`/api/v2/shop/products?search=${term}&page=${page}`)]),
);

/**
 * Declares a comparison: `script` runs against a server over a fresh database of every kind, each
 * started with `env` and given `products` first, and every answer must be the same on all of them.
 * Not `describeEachStore`: the answers of every database are compared with each other, so this needs
 * them all at once (and PostgreSQL among them).
 */
function sameAnswers(title: string, script: readonly Step[], { env = {}, products = [] }: { env?: Record<string, string>; products?: readonly NewProduct[] } = {}): void {
  describe(title, { skip: postgres.skip }, () => {
    const servers = new Map<string, RunningServer>();
    before(async () => {
      for (const store of STORES) {
        const server = await startFreshServer(store, env);
        servers.set(store.name, server);
        if (products.length > 0) {
          await server.store.insertProducts((async function* () {
            yield products;
          })());
        }
      }
    });
    after(async () => {
      for (const server of servers.values()) await server.stop();
    });

    it('get the same answers, byte for byte', async () => {
      const transcripts = new Map<string, string[]>();
      for (const [name, server] of servers) {
        const lines: string[] = [];
        for (const [label, run] of script) {
          const res = await run(server.url);
          lines.push(`${label}: ${res.status} ${res.headers['content-type'] ?? '-'} ${res.headers.location ?? '-'} ${res.text.replaceAll(server.url, 'BASE')}`);
        }
        transcripts.set(name, lines);
      }
      const [first, ...others] = [...transcripts.values()];
      for (const other of others) assert.deepEqual(other, first);
    });
  });
}

sameAnswers('the same requests on every database', SCRIPT);
sameAnswers('the same searches around the count\'s bound on every database, limit and offset', BOUND_LIMIT_OFFSET, { products: BOUND_CATALOGUE });
sameAnswers('the same searches around the count\'s bound on every database, page numbers', BOUND_PAGE_NUMBER, { env: { PAGINATION: 'page-number' }, products: BOUND_CATALOGUE });
