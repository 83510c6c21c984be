import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { REFUSED_TAG } from './resource.js';

/** Where the document and the interactive reference are served. */
export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PREFIX = '/docs';

const DESCRIPTION = `A shop's product catalogue over HTTP. Bodies are JSON; every error is an RFC 9457 problem document
(\`application/problem+json\`) whose \`errors\` map each failing field or parameter to its messages.
A trailing slash is optional on every route.

Choices marked *(decided)* were made where the original specification was silent:

- *(decided)* Money is exact: never a binary float on the way in, in storage or out. \`price\` is written
  as a string with two decimals, as Django REST Framework writes a DecimalField.
- *(decided)* A barcode is a string: a JSON number would lose leading zeros.
- *(decided)* An unknown field in a new product is a 400, so that a typo does not pass silently.
- *(decided)* HEAD is answered wherever GET is (RFC 9110 §9.1).
- *(decided)* A paging parameter that is not a whole number in range is a 400 naming it, not a silent fallback.

Any other method on a catalogue address is a 405 with an \`Allow\` header; a path that is no route is a 404.

People can browse the catalogue and add products on the service's own page, at [/](/).`;

/**
 * Collects every route's schema into an OpenAPI 3.1 document, served at /openapi.json, with an
 * interactive reference at /docs whose assets come from the service itself (no CDN).
 * Register it before the routes it documents: it learns them as they are added.
 */
export async function useApiDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Product catalogue', version: '1.0.0', description: DESCRIPTION },
      tags: [
        { name: 'v1', description: 'The whole list, one product, and creation.' },
        { name: 'v2', description: 'The catalogue a page at a time.' },
        { name: REFUSED_TAG, description: 'Methods a catalogue address does not serve: 405 with Allow.' },
      ],
    },
    exposeHeadRoutes: true,
    // Shared schemas appear under components.schemas by their $id (Product, Page, Problem, ...).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      dropHeadBodies(document.openapiObject.paths ?? {});
      return document.openapiObject;
    },
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX, uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}

type Responses = Record<string, object>;
type PathItems = Record<string, { head?: { responses?: Responses } } | undefined>;

/**
 * HEAD answers carry GET's headers but no body, so their responses must not promise content.
 * Replaced, not edited: a route serving several methods shares one operation object among them.
 */
function dropHeadBodies(paths: PathItems): void {
  for (const item of Object.values(paths)) {
    if (item?.head?.responses === undefined) continue;
    const responses: Responses = {};
    for (const [status, response] of Object.entries(item.head.responses)) {
      const { content: _content, ...rest } = response as { content?: unknown };
      responses[status] = rest;
    }
    item.head = { ...item.head, responses };
  }
}
