import type { FastifyInstance, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Pagination } from '../../config.js';
import type { CatalogueStore, ProductPage } from '../../storage/store.js';
import {
  PAGE_NUMBER_SIZE,
  limitOffsetLinks,
  pageNumberLinks,
  parseLimitOffset,
  parsePage,
} from '../contract/pagination.js';
import { HttpProblem } from '../contract/problem.js';
import { resource } from './resource.js';
import { CachedAnswers, serializeOk } from '../answers/cached-answers.js';
import { ETAG_HEADER, STORE_UNAVAILABLE, jsonResponse, problemResponse } from '../contract/responses.js';
import { SearchPageSchema, type PageWire } from '../contract/schemas.js';
import { linkedAnswerKey, linkedHitKey, requestAddress, type RequestAddress } from '../guards/request-address.js';
import type { KeptHits } from '../answers/kept-hits.js';
import { pageItemWire } from '../contract/wire.js';
import { FILTER_PARAMETERS, hasFilter, productFilter } from '../contract/filters.js';
import type { FieldErrors } from '../../catalogue/product.js';
import { SEARCH_COUNT_BOUND } from '../../catalogue/search.js';

/** Memory for serialized pages of the current revision (about 4,000 pages of 100). */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;
const PAGE_CACHE_ENTRIES = 20_000;

export interface ProductsV2Options {
  readonly store: CatalogueStore;
  /** Where the pages kept are answered from before routing. */
  readonly hits: KeptHits;
  readonly pagination: Pagination;
  readonly pageSize: number;
  readonly maxLimit: number;
}

/** v2: the catalogue a page at a time, in the style the deployment chose. */
export async function productsV2(app: FastifyInstance, options: ProductsV2Options): Promise<void> {
  const { store, pagination } = options;
  const querystring =
    pagination === 'limit-offset'
      ? Type.Object({
          ...FILTER_PARAMETERS,
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
          ...FILTER_PARAMETERS,
          page: Type.Optional(
            Type.String({
              description: `Page number (${PAGE_NUMBER_SIZE} products a page, fixed; \`page_size\` is ignored): a whole number ≥ 1 in plain digits, or "last"; absent or empty: 1.`,
              examples: ['2', 'last'],
            }),
          ),
        });

  // Serialized pages of the current generation, keyed by the whole address (every query parameter,
  // filters included): a hit needs no database work.
  const pages = new CachedAnswers(store, PAGE_CACHE_BYTES, PAGE_CACHE_ENTRIES);
  options.hits.add({ route: '/api/v2/shop/products', answers: pages, keyOf: linkedHitKey });

  resource(app, '/api/v2/shop/products', {
    GET: {
      options: {
        // The querystring schema documents the parameters; parseLimitOffset and parsePage check them,
        // with messages that name the parameter (ajv would refuse a repeated one without saying so).
        validatorCompiler: () => (value: unknown) => ({ value }),
        schema: {
          operationId: 'listProductsPage',
          summary: `One page of products (${pagination} style)`,
          description: [
            'Carries a strong ETag; send it back in If-None-Match for a 304 without a body while the catalogue is unchanged.',
            '',
            `This deployment pages by ${pagination === 'limit-offset' ? '`limit` and `offset`' : '`page` number'} (setting PAGINATION; the other style is \`${pagination === 'limit-offset' ? 'page-number' : 'limit-offset'}\`).`,
            '`next` and `previous` are absolute URLs that keep the other query parameters, or null. Unknown parameters are ignored.',
            '',
            'With `barcode` or `search`, `count` is the number of matching products and `results` a page of them in pk order; the links keep the filters.',
            `*(decided)* A search is counted up to ${SEARCH_COUNT_BOUND.toLocaleString('en')} matches: its page says \`count_exact\` (true: \`count\` is the number of matches; false: more than ${SEARCH_COUNT_BOUND.toLocaleString('en')} match, and \`count\` is ${SEARCH_COUNT_BOUND}). \`next\` is given while another match follows the page, so every match can be paged to. Without \`search\` the count is exact and \`count_exact\` absent.`,
            '',
            '*(decided)* A parameter that is not a whole number in range, in plain decimal digits (`limit=abc`, `limit=0`, `limit=1e2`, `offset=-1`, `page=1.5`), is a 400 naming the parameter rather than a silent fallback.',
          ].join('\n'),
          tags: ['v2'],
          querystring,
          response: {
            200: jsonResponse('One page; `results` hold exactly name, price and barcode, in pk order.', Type.Ref('Page'), { ETag: ETAG_HEADER }),
            304: { description: 'Not modified: the ETag in If-None-Match is still current. No body.', type: 'null' },
            400: problemResponse('A paging parameter or a filter is not valid; `errors` names each one.'),
            ...(pagination === 'page-number' ? { 404: problemResponse('The page is past the last page (with `search`: a page past page 1 with no match on it).') } : {}),
            503: STORE_UNAVAILABLE,
          },
        },
      },
      handler: (request, reply) =>
        // Only valid requests are kept, so a kept answer needs no parsing of the query.
        pages.answer(request, reply, linkedAnswerKey(request), async () => {
          const address = requestAddress(request);
          const pageRequest = pagination === 'limit-offset' ? limitOffsetRequest(address.params, options) : pageNumberRequest(address.params);
          const filter = productFilter(address.params, pageRequest.errors, pagination === 'limit-offset' ? 'The page parameters are not valid.' : 'The page parameter is not valid.');
          if (filter.search !== undefined) {
            // Counted to one past the bound, and read one past the page: enough to tell the count is
            // not exact, and whether another match follows the page, without reading every match.
            const searched = await pageRequest.search(() => store.countMatching(filter));
            const rows = await store.readFilteredPage(filter, searched.offset, searched.limit + 1, SEARCH_COUNT_BOUND + 1);
            return serializeOk(reply, searched.body(rows, address), SearchPageSchema);
          }
          let page: ProductPage;
          if (hasFilter(filter)) {
            // A barcode alone: one match at most, so the bound never cuts its count.
            const window = await pageRequest.window(() => store.countMatching(filter), false);
            page = await store.readFilteredPage(filter, window.offset, window.limit, SEARCH_COUNT_BOUND + 1);
          } else {
            const { count } = await store.describeCatalogue();
            const window = await pageRequest.window(async () => count, true);
            page = await store.readPage(window.offset, window.limit);
          }
          return serializeOk(reply, pageRequest.body(page, address));
        }),
    },
  });
}

/** One style's reading of a page request: which rows it needs, and the page built from them. */
interface PageRequest {
  /** The paging parameters' errors, reported together with the filters'. */
  readonly errors: FieldErrors;
  /**
   * The rows to read. Page-number style needs the count for `last`, and reads it otherwise only when
   * `countIsCheap`; past the last page the rows read are empty and `body` decides on the 404.
   */
  window(count: () => Promise<number>, countIsCheap: boolean): Promise<{ offset: number; limit: number }>;
  /** @throws HttpProblem 404 when the page does not exist at the count read with the rows. */
  body(page: ProductPage, address: RequestAddress): PageWire;
  /** The page of a search, whose count stops at the bound; `exactCount` is read only for page-number style's `last`. */
  search(exactCount: () => Promise<number>): Promise<SearchPage>;
}

/**
 * The page of a search: the rows it shows (`offset`, `limit`), and its body from rows read with one
 * more (another match follows the page when it is there) and a count to one past the bound.
 */
interface SearchPage {
  readonly offset: number;
  readonly limit: number;
  /** @throws HttpProblem 404 for a page past page 1 with no results (page-number style). */
  body(rows: ProductPage, address: RequestAddress): PageWire;
}

/** What a search page's rows say: its count as the contract writes it, whether another match follows, and its results. */
function searchRows(rows: ProductPage, limit: number): Pick<PageWire, 'count' | 'count_exact' | 'results'> & { more: boolean } {
  return {
    count: Math.min(rows.count, SEARCH_COUNT_BOUND),
    count_exact: rows.count <= SEARCH_COUNT_BOUND,
    more: rows.products.length > limit,
    results: rows.products.slice(0, limit).map(pageItemWire),
  };
}

/** A request whose paging parameters are bad: its errors go out with the filters' in one 400. */
function invalidPaging(errors: FieldErrors): PageRequest {
  const refused = (): never => {
    throw new Error('Invalid paging parameters were not refused.');
  };
  return { errors, window: refused, body: refused, search: refused };
}

function limitOffsetRequest(params: URLSearchParams, options: ProductsV2Options): PageRequest {
  const parsed = parseLimitOffset(params, options.pageSize, options.maxLimit);
  if (!parsed.ok) return invalidPaging(parsed.errors);
  const { limit, offset } = parsed.value;
  return {
    errors: {},
    window: async () => ({ offset, limit }),
    body: (page, { base, path }) => ({
      count: page.count,
      ...limitOffsetLinks(base, path, params, parsed.value, offset + limit < page.count),
      results: page.products.map(pageItemWire),
    }),
    search: async () => ({
      offset,
      limit,
      body: (rows, { base, path }) => {
        const { more, count, count_exact, results } = searchRows(rows, limit);
        return { count, count_exact, ...limitOffsetLinks(base, path, params, parsed.value, more), results };
      },
    }),
  };
}

function pageNumberRequest(params: URLSearchParams): PageRequest {
  const parsed = parsePage(params);
  if (!parsed.ok) return invalidPaging(parsed.errors);
  const requested = parsed.value;
  const lastPageOf = (count: number): number => Math.max(1, Math.ceil(count / PAGE_NUMBER_SIZE));
  const pageFor = (count: number): { page: number; lastPage: number } => {
    const lastPage = lastPageOf(count);
    return { page: requested === 'last' ? lastPage : requested, lastPage };
  };
  // The page as written: a number too large to hold exactly is still named as the client sent it.
  const missing = (why: string): HttpProblem => new HttpProblem(404, `Page ${params.get('page')} does not exist; ${why}.`);
  return {
    errors: {},
    window: async (count, countIsCheap) => {
      if (requested !== 'last' && !countIsCheap) return { offset: (requested - 1) * PAGE_NUMBER_SIZE, limit: PAGE_NUMBER_SIZE };
      // A page past the last reads nothing; its 404 is decided with the rows' own count.
      const total = await count();
      const { page, lastPage } = pageFor(total);
      return page > lastPage ? { offset: total, limit: 1 } : { offset: (page - 1) * PAGE_NUMBER_SIZE, limit: PAGE_NUMBER_SIZE };
    },
    body: (rows, { base, path }) => {
      const { page, lastPage } = pageFor(rows.count);
      if (page > lastPage) throw missing(`the last page is ${lastPage}`);
      return { count: rows.count, ...pageNumberLinks(base, path, params, page, page < lastPage), results: rows.products.map(pageItemWire) };
    },
    search: async (exactCount) => {
      // `last` is the one page whose place needs every match counted.
      const page = requested === 'last' ? lastPageOf(await exactCount()) : requested;
      return {
        offset: (page - 1) * PAGE_NUMBER_SIZE,
        limit: PAGE_NUMBER_SIZE,
        body: (rows, { base, path }) => {
          const { more, count, count_exact, results } = searchRows(rows, PAGE_NUMBER_SIZE);
          if (results.length === 0 && page > 1) {
            throw missing(count_exact ? `the last page is ${lastPageOf(count)}` : `more than ${SEARCH_COUNT_BOUND.toLocaleString('en')} products match, too few to reach it`);
          }
          return { count, count_exact, ...pageNumberLinks(base, path, params, page, more), results };
        },
      };
    },
  };
}
