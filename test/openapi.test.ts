import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RouteShorthandOptions } from 'fastify';
import Type from 'typebox';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { jsonResponse } from '../src/http/responses.js';
import { openStore } from '../src/storage/open-store.js';
import { postJson, send } from './helpers/http.js';
import { createProduct, uniqueBarcode } from './helpers/products.js';
import { auditResponses } from './helpers/openapi-responses.js';
import { startFreshServer, type RunningServer } from './helpers/server.js';
import { STORES } from './helpers/stores.js';

const PAGINATIONS = ['limit-offset', 'page-number'] as const;

for (const testStore of STORES) {
  for (const pagination of PAGINATIONS) {
    describe(`OpenAPI document (${testStore.name}, ${pagination})`, { skip: testStore.skip }, () => {
      let server: RunningServer;
      before(async () => {
        server = await startFreshServer(testStore, { PAGINATION: pagination, PAGE_SIZE: '2' });
      });
      // stop() fails the file when any answer below did not match the document.
      after(async () => server.stop());

      test('is served at /openapi.json and validates as OpenAPI 3.1', async () => {
        const res = await send(`${server.url}/openapi.json`);
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        const validator = new Validator();
        const result = await validator.validate(res.json as Record<string, unknown>);
        assert.deepEqual(result.errors, undefined);
        assert.equal(result.valid, true);
        assert.equal(validator.version, '3.1');
      });

      test('answers HEAD at /, /openapi.json and /docs like GET, without a body', async () => {
        for (const path of ['/', '/assets/style.css', '/openapi.json', '/docs']) {
          const get = await send(`${server.url}${path}`);
          const head = await send(`${server.url}${path}`, { method: 'HEAD' });
          assert.equal(get.status, 200, path);
          assert.equal(head.status, 200, path);
          assert.equal(head.text, '');
          assert.equal(head.headers['content-type'], get.headers['content-type'], path);
        }
      });

      test('serves the catalogue page with a policy that keeps every part of it local', async () => {
        const res = await send(`${server.url}/`);
        assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8$/);
        assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
        assert.match(res.text, /<script type="module" src="\/assets\/catalogue\.js"><\/script>/);
        assert.doesNotMatch(res.text, /(src|href)="(https?:)?\/\//);
        // Only the page's own parts are served from its folders, never the sources beside them.
        for (const path of ['/assets/catalogue.ts', '/assets/index.html', '/assets/../package.json']) {
          assert.equal((await send(`${server.url}${path}`)).status, 404, path);
        }
      });

      test('describes every route, method and status of the contract', async () => {
        const document = (await send(`${server.url}/openapi.json`)).json as {
          paths: Record<string, Record<string, { responses: Record<string, unknown>; requestBody?: unknown }>>;
        };
        const statuses = (path: string, method: string) => Object.keys(document.paths[path]?.[method]?.responses ?? {}).sort();
        assert.deepEqual(statuses('/api/v1/shop/products', 'get'), ['200', '503']);
        assert.deepEqual(statuses('/api/v1/shop/product/{pk}', 'get'), ['200', '304', '404', '503']);
        assert.deepEqual(statuses('/api/v1/shop/product/', 'post'), ['201', '400', '409', '413', '415', '422', '503']);
        assert.deepEqual(statuses('/api/v2/shop/products', 'get'), pagination === 'page-number' ? ['200', '304', '400', '404', '503'] : ['200', '304', '400', '503']);
        for (const path of ['/api/v1/shop/products', '/api/v1/shop/product/{pk}', '/api/v1/shop/product/', '/api/v2/shop/products']) {
          assert.deepEqual(statuses(path, 'options'), ['200'], path);
          assert.deepEqual(statuses(path, 'put'), ['405'], path);
          assert.deepEqual(statuses(path, 'delete'), ['405'], path);
        }
        assert.deepEqual(statuses('/healthz', 'get'), ['200']);
        assert.deepEqual(statuses('/readyz', 'get'), ['200', '503']);
        assert.ok(document.paths['/api/v1/shop/product/']?.['post']?.requestBody, 'the create route documents its body');
      });

      test('the interactive reference at /docs loads only its own assets', async () => {
        const res = await send(`${server.url}/docs`);
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), /^text\/html/);
        assert.doesNotMatch(res.text, /(src|href)="(https?:)?\/\//);
        const initializer = await send(`${server.url}/docs/static/swagger-initializer.js`);
        assert.equal(initializer.status, 200);
      });

      test('the answers of every documented status match the document', async () => {
        const product = await createProduct(server.url);
        await createProduct(server.url);
        await createProduct(server.url);
        const api = server.url;
        const v2 = pagination === 'limit-offset' ? [`${api}/api/v2/shop/products?limit=2&offset=1`, `${api}/api/v2/shop/products?offset=-1`] : [`${api}/api/v2/shop/products?page=1`, `${api}/api/v2/shop/products?page=0`, `${api}/api/v2/shop/products?page=9`];
        const answers = await Promise.all([
          send(`${api}/api/v1/shop/products`),
          send(`${api}/api/v1/shop/products`, { method: 'HEAD' }),
          send(`${api}/api/v1/shop/product/${product.pk}`),
          send(`${api}/api/v1/shop/product/${product.pk}`, { method: 'HEAD' }),
          send(`${api}/api/v1/shop/product/abc`),
          send(`${api}/api/v1/shop/product/`, { method: 'OPTIONS' }),
          send(`${api}/api/v1/shop/product/`, { method: 'DELETE' }),
          send(`${api}/api/v1/shop/product/`, { method: 'QUERY' }),
          send(`${api}/api/v1/shop/nothing`),
          postJson(`${api}/api/v1/shop/product/`, JSON.stringify({ name: 'Tea', barcode: uniqueBarcode(), price: 2.5 })),
          postJson(`${api}/api/v1/shop/product/`, JSON.stringify({ name: '', barcode: '123', prise: '1' })),
          postJson(`${api}/api/v1/shop/product/`, JSON.stringify({ name: 'Again', barcode: product.barcode, price: '1.00' })),
          postJson(`${api}/api/v1/shop/product/`, 'x'.repeat(20_000)),
          send(`${api}/api/v1/shop/product/`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'hello' }),
          ...v2.map((url) => send(url)),
        ]);
        assert.deepEqual(
          answers.map((res) => res.status),
          [200, 200, 200, 200, 404, 200, 405, 405, 404, 201, 400, 409, 413, 415, ...(pagination === 'limit-offset' ? [200, 400] : [200, 400, 404])],
        );
      });
    });
  }
}

describe('the response audit of the test server', () => {
  test('reports an undocumented status, a wrong media type and a body off its schema', async () => {
    const { location, drop } = await STORES[0]!.create();
    const store = await openStore(location);
    const app = await buildApp({ config: loadConfig({}), store });
    const audit = auditResponses(app);
    const documented: RouteShorthandOptions = { schema: { tags: ['test'], response: { 200: jsonResponse('A count.', Type.Object({ n: Type.Integer() })) } } };
    app.get('/status', documented, (_request, reply) => reply.code(202).send({ n: 1 }));
    app.get('/media', documented, (_request, reply) => reply.type('text/plain').send('1'));
    app.get('/body', documented, (_request, reply) => reply.type('application/json').send('{"n":"one"}'));
    app.get('/fine', documented, () => ({ n: 1 }));
    try {
      for (const url of ['/status', '/media', '/body', '/fine']) await app.inject(url);
    } finally {
      await app.close();
      await store.close();
      await drop();
    }
    assert.equal(audit.mismatches.length, 3, audit.mismatches.join('\n'));
    assert.match(audit.mismatches[0]!, /^GET \/status -> 202: status not documented/);
    assert.match(audit.mismatches[1]!, /^GET \/media -> 200: media type "text\/plain"/);
    assert.match(audit.mismatches[2]!, /^GET \/body -> 200: .*must be integer/);
  });
});
