import { readFile } from 'node:fs/promises';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { builtFile } from './build-output.js';

/** Where the document, the interactive reference and the contract are served. */
export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PREFIX = '/docs';
export const CONTRACT_PATH = '/docs/API.md';

/** The name under which the document declares the bearer token of API_TOKEN. */
export const WRITE_TOKEN_SCHEME = 'bearerToken';

export const TAGS = Object.freeze({
  v1: 'v1',
  v2: 'v2',
  health: 'health',
  head: 'headers only (HEAD)',
  preflight: 'CORS preflight (OPTIONS)',
});

/** The path-item extension that describes the answer to every method a path does not serve. */
export const REFUSED_METHODS_EXTENSION = 'x-refused-methods';

// The contract is served as written in the repository's docs/API.md, which the build copies.
const CONTRACT_FILE = builtFile(import.meta.url, 'docs/API.md');

const DESCRIPTION = `A shop's product catalogue over HTTP: list every product, read one, create one, and page
through the catalogue. Bodies are JSON; every error is an RFC 9457 problem document
(\`application/problem+json\`) whose \`errors\` map each failing field or parameter to its messages.

**The full contract** — every route, rule, status, decided point and extension — is
[docs/API.md](${CONTRACT_PATH}), served by this service as written in its repository (\`docs/API.md\`).
This reference describes each operation; the contract says what the service promises and why.

- A trailing slash is optional on every path (\`/api/v1/shop/product\` and \`/api/v1/shop/product/\` are one route).
- Wherever GET is answered, HEAD is too: the same status and headers without a body. Every path also answers
  the CORS preflight (OPTIONS). Both are listed after the operations, under their own tags.
- Any other method is refused: 405 with an \`Allow\` header naming the path's methods, and a problem document.
  Refused methods are not operations: each path's description and its \`${REFUSED_METHODS_EXTENSION}\` extension say so.
- A path that is no route is a 404; a \`Host\` header that is not a plain host name and port is a 400, on every route.
- Where the deployment sets API_TOKEN, creating a product needs \`Authorization: Bearer <token>\`; reads stay public.

Choices marked *(decided)* were made where the original specification was silent:

- *(decided)* Money is exact: never a binary float on the way in, in storage or out. \`price\` is written
  as a string with two decimals, as Django REST Framework writes a DecimalField.
- *(decided)* A barcode is a string: a JSON number would lose leading zeros.
- *(decided)* An unknown field in a new product is a 400, so that a typo does not pass silently.
- *(decided)* HEAD is answered wherever GET is (RFC 9110 §9.1).
- *(decided)* A paging parameter that is not a whole number in range is a 400 naming it, not a silent fallback.

People can browse the catalogue and add products on the service's own page, at [/](/).`;

export interface ApiDocsOptions {
  /** Whether creating needs the bearer token (API_TOKEN is set): the document then declares it. */
  readonly writeToken: boolean;
}

/**
 * Collects every route's schema into an OpenAPI 3.1 document, served at /openapi.json, with an
 * interactive reference at /docs that loads that document and whose assets come from the service
 * itself (no CDN), and the contract at /docs/API.md.
 * Register it before the routes it documents: it learns them as they are added (see buildApp).
 */
export async function useApiDocs(app: FastifyInstance, { writeToken }: ApiDocsOptions): Promise<void> {
  const contract = await readFile(CONTRACT_FILE, 'utf8');
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Product catalogue', version: '1.0.0', description: DESCRIPTION },
      // Relative: the document describes the service that serves it, wherever it is deployed.
      servers: [{ url: '/', description: 'The service this document was fetched from.' }],
      // Reads are public; a write route states the token it needs (see useWriteToken).
      security: [],
      tags: [
        { name: TAGS.v1, description: 'The whole list, one product, and creation.' },
        { name: TAGS.v2, description: 'The catalogue a page at a time.' },
        { name: TAGS.health, description: 'Probes for load balancers and orchestrators.' },
        { name: TAGS.head, description: 'HEAD, wherever GET is answered: the GET answer\'s status and headers (such as `ETag`), without a body.' },
        { name: TAGS.preflight, description: 'The CORS preflight a browser sends before a cross-origin request; answered 200 on every path.' },
      ],
      components: writeToken
        ? { securitySchemes: { [WRITE_TOKEN_SCHEME]: { type: 'http', scheme: 'bearer', description: "The deployment's API_TOKEN." } } }
        : {},
    },
    exposeHeadRoutes: true,
    // Shared schemas appear under components.schemas by their $id (Product, Page, Problem, ...).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => ({
      schema: route.method === 'HEAD' && schema !== undefined ? headOperation(schema) : schema,
      url: openApiPath(url),
    }),
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      describeRefusedMethods(document.openapiObject.paths ?? {});
      return document.openapiObject;
    },
  });
  // `urls` rather than the plugin's own copy at /docs/json: the reference shows the address a client uses.
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { docExpansion: 'list', deepLinking: true, urls: [{ url: OPENAPI_PATH, name: OPENAPI_PATH }] },
  });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  app.get(CONTRACT_PATH, { schema: { hide: true } }, (_request, reply) =>
    reply.type('text/markdown; charset=utf-8').header('X-Content-Type-Options', 'nosniff').send(contract),
  );
}

/**
 * A route's path as the document names it: `{name}` for each parameter, and no trailing slash
 * (the router ignores it, and a path ending in one reads as a different path to most tools).
 */
export function openApiPath(routeUrl: string): string {
  const path = routeUrl.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

type ResponseSchemas = Record<string, { readonly content?: unknown; readonly type?: unknown }>;

/**
 * HEAD is its own operation, derived from GET's schema: the same parameters and statuses with GET's
 * headers, no body, and its own id and tag, so that it stays out of the way of the GET it mirrors.
 * Built anew: Fastify gives the GET and HEAD routes one schema object.
 */
function headOperation(get: FastifySchema): FastifySchema {
  const responses: ResponseSchemas = {};
  for (const [status, response] of Object.entries((get.response ?? {}) as ResponseSchemas)) {
    const { content: _body, ...withoutBody } = response;
    responses[status] = { ...withoutBody, type: 'null' };
  }
  return {
    ...get,
    // The plugin names the HEAD twin `<id>-head`, which no code generator turns into a good name.
    operationId: `${String(get.operationId).replace(/-head$/, '')}Headers`,
    summary: `Headers only: ${get.summary}`,
    description: 'The same status and headers as GET, without a body: a cheap check that the answer exists or changed.',
    tags: [TAGS.head],
    response: responses,
  };
}

interface PathItem {
  description?: string;
  [REFUSED_METHODS_EXTENSION]?: { allow: string; response: object };
}

const SERVED_ORDER = ['get', 'head', 'post', 'options'] as const;

/**
 * Says on each path which methods it answers and how it refuses the others (405 with `Allow`),
 * instead of listing refusals as operations a client could call.
 */
function describeRefusedMethods(paths: Record<string, unknown>): void {
  for (const [path, item] of Object.entries(paths) as Array<[string, Record<string, unknown>]>) {
    const allow = SERVED_ORDER.filter((method) => item[method] !== undefined)
      .map((method) => method.toUpperCase())
      .join(', ');
    const described: PathItem = {
      description: `Answers ${allow}. Any other method (PUT, PATCH, DELETE, TRACE, ...) is refused: 405 with \`Allow: ${allow}\` and a problem document.`,
      [REFUSED_METHODS_EXTENSION]: {
        allow,
        response: {
          description: 'The method is not one this path serves; `Allow` names those it does. Nothing is read or changed.',
          headers: { Allow: { description: "The path's methods.", schema: { type: 'string' }, example: allow } },
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        },
      },
    };
    paths[path] = { ...described, ...item };
  }
}
