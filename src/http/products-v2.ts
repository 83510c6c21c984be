import type { FastifyInstance, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Pagination } from '../config.js';
import type { CatalogueStore, ProductPage } from '../storage/store.js';
import { sendTagged, serialized, tagBody, type TaggedBody } from './conditional.js';
import type { CorsSettings } from './cors.js';
import {
  PAGE_NUMBER_SIZE,
  limitOffsetLinks,
  pageNumberLinks,
  parseLimitOffset,
  parsePage,
} from './pagination.js';
import { HttpProblem, ProblemSchema } from './problem.js';
import { resource } from './resource.js';
import { RevisionCache } from './revision-cache.js';
import { PageSchema, type PageWire } from './schemas.js';
import { pageItemWire, requestParams, requestPath } from './wire.js';

/** Memory for serialized pages of the current revision (about 4,000 pages of 100). */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;

export interface ProductsV2Options {
  readonly store: CatalogueStore;
  readonly cors: CorsSettings;
  readonly pagination: Pagination;
  readonly pageSize: number;
  readonly maxLimit: number;
}

/** v2: the catalogue a page at a time, in the style the deployment chose. */
export async function productsV2(app: FastifyInstance, options: ProductsV2Options): Promise<void> {
  const { store, cors, pagination } = options;
  const querystring =
    pagination === 'limit-offset'
      ? Type.Object({
          limit: Type.Optional(Type.String({ description: `Items in this page: a whole number ≥ 1; default ${options.pageSize}; above ${options.maxLimit} it is lowered to ${options.maxLimit}.` })),
          offset: Type.Optional(Type.String({ description: 'Items skipped from the start: a whole number ≥ 0; default 0.' })),
        })
      : Type.Object({
          page: Type.Optional(Type.String({ description: `Page number (${PAGE_NUMBER_SIZE} a page): a whole number ≥ 1, or "last"; default 1.` })),
        });

  // Serialized pages of the current revision: a hit costs one single-row read of the revision.
  const cache = new RevisionCache<TaggedBody>(PAGE_CACHE_BYTES, (tagged) => tagged.body.length);

  resource(app, cors, '/api/v2/shop/products', {
    GET: {
      options: {
        // The querystring schema documents the parameters; parseLimitOffset and parsePage check them,
        // with messages that name the parameter (ajv would refuse a repeated one without saying so).
        validatorCompiler: () => (value: unknown) => ({ value }),
        schema: {
          summary: `One page of products (${pagination} style)`,
          description: 'Carries a strong ETag; send it back in If-None-Match for a 304 without a body while the catalogue is unchanged.',
          tags: ['v2'],
          querystring,
          response: { 200: PageSchema, 304: Type.Null({ description: 'Not modified: the ETag given is still current.' }), 400: ProblemSchema, 404: ProblemSchema },
        },
      },
      handler: async (request, reply) => {
        // Only valid requests are cached, so a hit needs no parsing of the query.
        const key = `${baseUrl(request)}${request.url}`;
        const { revision, count } = await store.describeCatalogue();
        const cached = cache.get(revision, key);
        if (cached !== undefined) return sendTagged(request, reply, cached);

        const params = requestParams(request.url);
        const pageRequest = pagination === 'limit-offset' ? limitOffsetRequest(params, options) : pageNumberRequest(params);

        const window = pageRequest.window(count);
        const page = await store.readPage(window.offset, window.limit);
        const body = pageRequest.body(page, baseUrl(request), requestPath(request.url), params);
        const tagged = tagBody(serialized(reply.serialize(body)));
        cache.set(page.revision, key, tagged);
        return sendTagged(request, reply, tagged);
      },
    },
  });
}

/** One style's reading of a page request: which rows it needs, and the page built from them. */
interface PageRequest {
  /** The rows to read, given the count just read (page-number style needs it for `last`). */
  window(count: number): { offset: number; limit: number };
  /** @throws HttpProblem 404 when the page does not exist at the count read with the rows. */
  body(page: ProductPage, base: string, path: string, params: URLSearchParams): PageWire;
}

function limitOffsetRequest(params: URLSearchParams, options: ProductsV2Options): PageRequest {
  const parsed = parseLimitOffset(params, options.pageSize, options.maxLimit);
  if (!parsed.ok) throw new HttpProblem(400, 'The page parameters are not valid.', { errors: parsed.errors });
  const { limit, offset } = parsed.value;
  return {
    window: () => ({ offset, limit }),
    body: (page, base, path) => ({
      count: page.count,
      ...limitOffsetLinks(base, path, params, parsed.value, page.count),
      results: page.products.map(pageItemWire),
    }),
  };
}

function pageNumberRequest(params: URLSearchParams): PageRequest {
  const parsed = parsePage(params);
  if (!parsed.ok) throw new HttpProblem(400, 'The page parameter is not valid.', { errors: parsed.errors });
  const pageFor = (count: number): { page: number; lastPage: number } => {
    const lastPage = Math.max(1, Math.ceil(count / PAGE_NUMBER_SIZE));
    return { page: parsed.value === 'last' ? lastPage : parsed.value, lastPage };
  };
  return {
    window: (count) => ({ offset: (pageFor(count).page - 1) * PAGE_NUMBER_SIZE, limit: PAGE_NUMBER_SIZE }),
    body: (rows, base, path) => {
      const { page, lastPage } = pageFor(rows.count);
      if (page > lastPage) throw new HttpProblem(404, `Page ${page} does not exist; the last page is ${lastPage}.`);
      return { count: rows.count, ...pageNumberLinks(base, path, params, page, lastPage), results: rows.products.map(pageItemWire) };
    },
  };
}

/** `http://host:port` as the client addressed the service. */
function baseUrl(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}
