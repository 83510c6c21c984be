import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RouteShorthandOptions } from 'fastify';
import Type from 'typebox';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { REFUSED_METHODS_EXTENSION } from '../src/http/contract/docs.js';
import { jsonResponse } from '../src/http/contract/responses.js';
import { openStore } from '../src/storage/open-store.js';
import { ROOT } from './helpers/build.js';
import { describeEachStore } from './helpers/each-store.js';
import { postJson, send } from './helpers/http.js';
import { auditResponses } from './helpers/openapi-responses.js';
import { createProduct, uniqueBarcode } from './helpers/products.js';
import { startFreshServer } from './helpers/server.js';
import { sqlite } from './helpers/stores.js';

const PAGINATIONS = ['limit-offset', 'page-number'] as const;

const DOCUMENTED_PATHS = ['/healthz', '/readyz', '/api/v1/shop/products', '/api/v1/shop/product/{pk}', '/api/v1/shop/product', '/api/v2/shop/products', '/api/v2/shop/changes'];

interface OperationShape {
  readonly responses?: Record<string, unknown>;
  readonly requestBody?: unknown;
  readonly operationId?: string;
  readonly description?: string;
  readonly tags?: string[];
}

interface OpenApiDocument {
  /** Operations by method, beside the path's `description` and extensions (read through casts). */
  readonly paths: Record<string, Record<string, OperationShape | undefined>>;
  readonly servers?: unknown;
  readonly security?: unknown;
}

for (const pagination of PAGINATIONS) {
  // The servers' stop() fails the file when any answer below did not match the document.
  describeEachStore(`OpenAPI document (${pagination})`, { env: { PAGINATION: pagination, PAGE_SIZE: '2' } }, (ctx) => {
    test('is served at /openapi.json and validates as OpenAPI 3.1', async () => {
      const res = await send(`${ctx.server.url}/openapi.json`);
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const validator = new Validator();
      const result = await validator.validate(res.json as Record<string, unknown>);
      assert.deepEqual(result.errors, undefined);
      assert.equal(result.valid, true);
      assert.equal(validator.version, '3.1');
    });

    test('answers HEAD at /, /openapi.json, /docs and /docs/API.md like GET, without a body', async () => {
      for (const path of ['/', '/assets/style.css', '/openapi.json', '/docs', '/docs/API.md']) {
        const get = await send(`${ctx.server.url}${path}`);
        const head = await send(`${ctx.server.url}${path}`, { method: 'HEAD' });
        assert.equal(get.status, 200, path);
        assert.equal(head.status, 200, path);
        assert.equal(head.text, '');
        assert.equal(head.headers['content-type'], get.headers['content-type'], path);
      }
    });

    test('serves the catalogue page with a policy that keeps every part of it local', async () => {
      const res = await send(`${ctx.server.url}/`);
      assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8$/);
      assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
      assert.match(res.text, /<script type="module" src="\/assets\/catalogue\.js"><\/script>/);
      assert.doesNotMatch(res.text, /(src|href)="(https?:)?\/\//);
      // Only the page's own parts are served from its folders, never the sources beside them.
      for (const path of ['/assets/catalogue.ts', '/assets/index.html', '/assets/../package.json']) {
        assert.equal((await send(`${ctx.server.url}${path}`)).status, 404, path);
      }
    });

    test('describes every route, method and status of the contract', async () => {
      const document = (await send(`${ctx.server.url}/openapi.json`)).json as OpenApiDocument;
      const statuses = (path: string, method: string) => Object.keys(document.paths[path]?.[method]?.responses ?? {}).sort();
      assert.deepEqual(Object.keys(document.paths).sort(), [...DOCUMENTED_PATHS].sort());
      assert.deepEqual(statuses('/api/v1/shop/products', 'get'), ['200', '304', '400', '503']);
      assert.deepEqual(statuses('/api/v1/shop/product/{pk}', 'get'), ['200', '304', '400', '404', '503']);
      assert.deepEqual(statuses('/api/v1/shop/product', 'post'), ['201', '400', '409', '410', '413', '415', '422', '503', '507']);
      assert.deepEqual(statuses('/api/v2/shop/products', 'get'), pagination === 'page-number' ? ['200', '304', '400', '404', '503'] : ['200', '304', '400', '503']);
      assert.deepEqual(statuses('/api/v2/shop/changes', 'get'), ['200', '304', '400', '409', '503']);
      assert.deepEqual(statuses('/healthz', 'get'), ['200', '400']);
      assert.deepEqual(statuses('/readyz', 'get'), ['200', '400', '503']);
      for (const path of DOCUMENTED_PATHS) {
        // The overload answer is on every path but the liveness probe's.
        assert.deepEqual(statuses(path, 'options'), path === '/healthz' ? ['200', '400'] : ['200', '400', '503'], path);
        if (document.paths[path]?.['get'] !== undefined) assert.deepEqual(statuses(path, 'head'), statuses(path, 'get'), path);
      }
      assert.ok(document.paths['/api/v1/shop/product']?.['post']?.requestBody, 'the create route documents its body');
    });

    test('offers the served methods as operations and describes the refused ones on each path', async () => {
      const document = (await send(`${ctx.server.url}/openapi.json`)).json as OpenApiDocument;
      const operationIds: string[] = [];
      for (const [path, item] of Object.entries(document.paths)) {
        const methods = Object.keys(item).filter((key) => !key.startsWith('x-') && key !== 'description');
        const allow = path === '/api/v1/shop/product' ? ['post', 'options'] : ['get', 'head', 'options'];
        assert.deepEqual(methods, allow, path);
        const refused = item[REFUSED_METHODS_EXTENSION] as unknown as { allow: string } | undefined;
        assert.equal(refused?.allow, allow.map((m) => m.toUpperCase()).join(', '), path);
        assert.match(String(item.description), /405/, path);
        for (const method of methods) {
          const operation = item[method];
          assert.ok(operation?.operationId !== undefined && operation.description !== undefined, `${method} ${path}`);
          operationIds.push(operation.operationId);
        }
        if (item['head'] !== undefined) assert.deepEqual(item['head'].tags, ['headers only (HEAD)'], path);
        assert.deepEqual(item['options']?.tags, ['CORS preflight (OPTIONS)'], path);
      }
      assert.equal(new Set(operationIds).size, operationIds.length, `operationIds are unique: ${operationIds.join(', ')}`);
      assert.deepEqual(document.servers, [{ url: '/', description: 'The service this document was fetched from.' }]);
      assert.deepEqual(document.security, []);
    });

    test('every documented path refuses the other methods as it says', async () => {
      const document = (await send(`${ctx.server.url}/openapi.json`)).json as OpenApiDocument;
      for (const [path, item] of Object.entries(document.paths)) {
        const url = `${ctx.server.url}${path.replace('{pk}', '1')}`;
        const allow = (item[REFUSED_METHODS_EXTENSION] as unknown as { allow: string }).allow;
        for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE', 'PROPFIND'].filter((m) => !allow.split(', ').includes(m))) {
          // The audit of the ctx.server checks each answer against the path's description.
          const res = await send(url, { method });
          assert.equal(res.status, 405, `${method} ${path}`);
          assert.equal(res.headers.allow, allow, `${method} ${path}`);
        }
      }
    });

    test('the interactive reference at /docs loads only its own assets', async () => {
      const res = await send(`${ctx.server.url}/docs`);
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.doesNotMatch(res.text, /(src|href)="(https?:)?\/\//);
      const initializer = await send(`${ctx.server.url}/docs/static/swagger-initializer.js`);
      assert.equal(initializer.status, 200);
      // The reference loads and shows the address clients use, not the plugin's own copy at /docs/json.
      assert.match(initializer.text, /"urls":\[\{"url":"\/openapi\.json","name":"\/openapi\.json"\}\]/);
    });

    test('serves the contract at /docs/API.md, as written in the repository, and the document links it', async () => {
      const res = await send(`${ctx.server.url}/docs/API.md`);
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'text/markdown; charset=utf-8');
      assert.equal(res.text, readFileSync(join(ROOT, 'docs/API.md'), 'utf8'));
      const document = (await send(`${ctx.server.url}/openapi.json`)).json as { info: { description: string } };
      assert.match(document.info.description, /\[docs\/API\.md\]\(\/docs\/API\.md\)/);
    });

    test('the answers of every documented status match the document', async () => {
      const product = await createProduct(ctx.server.url);
      await createProduct(ctx.server.url);
      await createProduct(ctx.server.url);
      const api = ctx.server.url;
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

// buildApp registers the rate limit and the write token after the probes and before the catalogue's
// routes, because their onRoute hooks document 429 and 401 only on routes added after them.
describe('the document with RATE_LIMIT and API_TOKEN', () => {
  test('declares 429 on every catalogue operation but not on probes, and 401 with the token on writes only', async () => {
    const server = await startFreshServer(sqlite, { RATE_LIMIT: '100/minute', API_TOKEN: 'test-token-0123456789abcdef' });
    try {
      const document = (await send(`${server.url}/openapi.json`)).json as OpenApiDocument;
      const operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method]) => ['get', 'post'].includes(method))
          .map(([method, operation]) => ({ path, method, operation: operation as { responses: Record<string, unknown>; security?: unknown } })),
      );
      assert.ok(operations.length > 0);
      for (const { path, method, operation } of operations) {
        const what = `${method} ${path}`;
        assert.equal(Object.hasOwn(operation.responses, '429'), !['/healthz', '/readyz'].includes(path), what);
        assert.equal(Object.hasOwn(operation.responses, '401'), method === 'post', what);
        assert.equal(operation.security !== undefined, method === 'post', what);
      }
    } finally {
      await server.stop();
    }
  });
});

// The overload refusal answers any request but the probes' and the metrics' with a 503; the document
// says so on every operation a client may call, whether the refusal is on (production) or not.
describe('the overload answer in the document', () => {
  test('every operation but /healthz and /metrics declares a 503 problem with Retry-After', async () => {
    const server = await startFreshServer(sqlite);
    try {
      const document = (await send(`${server.url}/openapi.json`)).json as OpenApiDocument;
      const operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method]) => ['get', 'head', 'post', 'options'].includes(method))
          .map(([method, operation]) => ({ path, method, operation: operation as { responses: Record<string, { headers?: Record<string, unknown> }> } })),
      );
      assert.ok(operations.length > 0);
      for (const { path, method, operation } of operations) {
        const unavailable = operation.responses['503'];
        if (['/healthz', '/metrics'].includes(path)) continue;
        assert.ok(unavailable !== undefined, `${method} ${path} declares no 503`);
        assert.ok(Object.hasOwn(unavailable.headers ?? {}, 'Retry-After'), `${method} ${path}: its 503 has no Retry-After`);
      }
    } finally {
      await server.stop();
    }
  });
});

describe('the response audit of the test server', () => {
  test('reports an undocumented status, a wrong media type, a body off its schema, and refusals unlike the document', async () => {
    const { location, drop } = await sqlite.create();
    const store = await openStore(location);
    const app = await buildApp({ config: loadConfig({}), store });
    const audit = auditResponses(app);
    const documented: RouteShorthandOptions = { schema: { tags: ['test'], response: { 200: jsonResponse('A count.', Type.Object({ n: Type.Integer() })) } } };
    app.get('/status', documented, (_request, reply) => reply.code(202).send({ n: 1 }));
    app.get('/media', documented, (_request, reply) => reply.type('text/plain').send('1'));
    app.get('/body', documented, (_request, reply) => reply.type('application/json').send('{"n":"one"}'));
    app.get('/fine', documented, () => ({ n: 1 }));
    // Served without being documented, and refused with an Allow other than the path's methods.
    app.post('/fine', { schema: { hide: true } }, () => ({ n: 2 }));
    app.delete('/fine', { schema: { hide: true } }, (_request, reply) => reply.code(405).header('Allow', 'GET').send());
    try {
      for (const url of ['/status', '/media', '/body', '/fine']) await app.inject(url);
      await app.inject({ method: 'POST', url: '/fine' });
      await app.inject({ method: 'DELETE', url: '/fine' });
      // A catalogue path's refusal, as its description says: no mismatch.
      assert.equal((await app.inject({ method: 'DELETE', url: '/api/v1/shop/products' })).statusCode, 405);
    } finally {
      await app.close();
      await store.close();
      await drop();
    }
    assert.equal(audit.mismatches.length, 5, audit.mismatches.join('\n'));
    assert.match(audit.mismatches[0]!, /^GET \/status -> 202: status not documented/);
    assert.match(audit.mismatches[1]!, /^GET \/media -> 200: media type "text\/plain"/);
    assert.match(audit.mismatches[2]!, /^GET \/body -> 200: .*must be integer/);
    assert.match(audit.mismatches[3]!, /^POST \/fine -> 200: POST is not an operation of \/fine/);
    assert.match(audit.mismatches[4]!, /^DELETE \/fine -> 405: Allow is "GET", the document says "GET, HEAD"/);
  });
});
