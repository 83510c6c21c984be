import type { FastifyInstance, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Pagination } from '../config.js';
import type { CatalogueStore } from '../storage/store.js';
import type { CorsSettings } from './cors.js';
import {
  PAGE_NUMBER_SIZE,
  limitOffsetLinks,
  pageNumberLinks,
  parseLimitOffset,
  parsePage,
} from './pagination.js';
import { HttpProblem } from './problem.js';
import { resource } from './resource.js';
import { STORE_UNAVAILABLE, jsonResponse, problemResponse } from './responses.js';
import type { PageWire } from './schemas.js';
import { requestAddress } from './request-address.js';
import { pageItemWire } from './wire.js';

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
          limit: Type.Optional(
            Type.String({
              description: `Items in this page: a whole number ≥ 1 in plain digits; default ${options.pageSize}; above ${options.maxLimit} it is lowered to ${options.maxLimit}, and the links carry ${options.maxLimit}.`,
              examples: ['20'],
            }),
          ),
          offset: Type.Optional(
            Type.String({ description: 'Items skipped from the start: a whole number ≥ 0 in plain digits; default 0. Past the end: 200 with empty results.', examples: ['40'] }),
          ),
        })
      : Type.Object({
          page: Type.Optional(
            Type.String({
              description: `Page number (${PAGE_NUMBER_SIZE} products a page, fixed; \`page_size\` is ignored): a whole number ≥ 1 in plain digits, or "last"; absent or empty: 1.`,
              examples: ['2', 'last'],
            }),
          ),
        });

  resource(app, cors, '/api/v2/shop/products', {
    GET: {
      options: {
        // The querystring schema documents the parameters; parseLimitOffset and parsePage check them,
        // with messages that name the parameter (ajv would refuse a repeated one without saying so).
        validatorCompiler: () => (value: unknown) => ({ value }),
        schema: {
          summary: `One page of products (${pagination} style)`,
          description: [
            `This deployment pages by ${pagination === 'limit-offset' ? '`limit` and `offset`' : '`page` number'} (setting PAGINATION; the other style is \`${pagination === 'limit-offset' ? 'page-number' : 'limit-offset'}\`).`,
            '`next` and `previous` are absolute URLs that keep the other query parameters, or null. Unknown parameters are ignored.',
            '',
            '*(decided)* A parameter that is not a whole number in range, in plain decimal digits (`limit=abc`, `limit=0`, `limit=1e2`, `offset=-1`, `page=1.5`), is a 400 naming the parameter rather than a silent fallback.',
          ].join('\n'),
          tags: ['v2'],
          querystring,
          response: {
            200: jsonResponse('One page; `results` hold exactly name, price and barcode, in pk order.', Type.Ref('Page')),
            400: problemResponse('A paging parameter is not valid; `errors` names it.'),
            ...(pagination === 'page-number' ? { 404: problemResponse('The page is past the last page.') } : {}),
            503: STORE_UNAVAILABLE,
          },
        },
      },
      handler: async (request) =>
        pagination === 'limit-offset' ? limitOffsetPage(request, store, options) : pageNumberPage(request, store),
    },
  });
}

async function limitOffsetPage(request: FastifyRequest, store: CatalogueStore, options: ProductsV2Options): Promise<PageWire> {
  const { base, path, params } = requestAddress(request);
  const parsed = parseLimitOffset(params, options.pageSize, options.maxLimit);
  if (!parsed.ok) throw new HttpProblem(400, 'The page parameters are not valid.', { errors: parsed.errors });
  const count = await store.countProducts();
  const { limit, offset } = parsed.value;
  const products = offset >= count ? [] : await store.listProducts(offset, limit);
  const links = limitOffsetLinks(base, path, params, parsed.value, count);
  return { count, ...links, results: products.map(pageItemWire) };
}

async function pageNumberPage(request: FastifyRequest, store: CatalogueStore): Promise<PageWire> {
  const { base, path, params } = requestAddress(request);
  const parsed = parsePage(params);
  if (!parsed.ok) throw new HttpProblem(400, 'The page parameter is not valid.', { errors: parsed.errors });
  const count = await store.countProducts();
  const lastPage = Math.max(1, Math.ceil(count / PAGE_NUMBER_SIZE));
  const page = parsed.value === 'last' ? lastPage : parsed.value;
  if (page > lastPage) {
    // The page as written: a number too large to hold exactly is still named as the client sent it.
    throw new HttpProblem(404, `Page ${params.get('page')} does not exist; the last page is ${lastPage}.`);
  }
  const products = await store.listProducts((page - 1) * PAGE_NUMBER_SIZE, PAGE_NUMBER_SIZE);
  const links = pageNumberLinks(base, path, params, page, lastPage);
  return { count, ...links, results: products.map(pageItemWire) };
}
