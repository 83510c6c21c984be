import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { InvalidProductError } from '../../catalogue/errors.js';
import { JsonNumber } from '../../catalogue/json-number.js';
import { checkNewProduct, type Product } from '../../catalogue/product.js';
import type { CatalogueStore } from '../../storage/store.js';
import { BODY_LIMIT_BYTES, UNSUPPORTED_MEDIA_TYPE } from '../guards/json-body.js';
import Type from 'typebox';
import { createProductOnce } from '../guards/idempotency.js';
import { HttpProblem } from '../contract/problem.js';
import { resource } from './resource.js';
import { SAFE_INTEGER_DIGITS } from '../contract/pagination.js';
import { CachedAnswers, serializeOk } from '../answers/cached-answers.js';
import { ETAG_HEADER, STORE_UNAVAILABLE, jsonResponse, problemResponse } from '../contract/responses.js';
import { ProductListSchema } from '../contract/schemas.js';
import { productWire } from '../contract/wire.js';
import { FILTER_QUERY, hasFilter, productFilter } from '../contract/filters.js';
import { requestAddress } from '../guards/request-address.js';
import type { KeptHits } from '../answers/kept-hits.js';
import { LIST_STEP_ROWS, listStream, productsStep, type WholeLists } from '../answers/list-stream.js';

/** Rows of a filtered list read at first: fewer matches are kept whole. */
const LIST_BATCH = 2_000;

/**
 * Lists of up to this many products are read whole and kept for the generation they were read at, with
 * their ETag; longer ones are streamed as they are read, so memory stays flat however large the
 * catalogue grows.
 */
const KEPT_LIST_MAX_PRODUCTS = 50_000;

/**
 * Characters one product takes in the list, at most for any plain name: the keys and punctuation 42,
 * pk 16, name 200, barcode 13, price 13 (about 290); the rest is room for names that need escaping.
 */
const LIST_CHARACTERS_PER_PRODUCT = 400;

/**
 * Lists and filtered lists kept (a till scans the same barcodes all day): room for the longest list
 * kept whole, and 16 MB of filtered ones beside it.
 */
const LISTS_KEPT_BYTES = KEPT_LIST_MAX_PRODUCTS * LIST_CHARACTERS_PER_PRODUCT + 16 * 1024 * 1024;

/**
 * Serialized products, by pk: a hit needs no database work. Kept while no product that exists changes
 * (a create does not end them: under a stream of creates every detail read would otherwise go to the
 * database); a product not found is never kept. Bounded in bytes and in entries (each entry also costs
 * a Map slot and two string headers beyond its bytes).
 */
const DETAIL_CACHE_BYTES = 16 * 1024 * 1024;
const KEPT_ENTRIES = 100_000;

export interface ProductsV1Options {
  readonly store: CatalogueStore;
  /** Where the lists and products kept are answered from before routing. */
  readonly hits: KeptHits;
  /** The streamed lists' figures. */
  readonly lists: WholeLists;
  /** How long a list is kept whole and how many rows a streamed one reads per step; the defaults unless a test says. */
  readonly wholeList?: WholeListSettings;
}

/** Where a list stops being kept whole and is streamed instead, and the rows per step of a streamed one. */
export interface WholeListSettings {
  readonly keptMaxProducts?: number;
  readonly stepRows?: number;
}

/** v1: the whole catalogue in one array, one product by `pk`, and creation. */
export async function productsV1(app: FastifyInstance, { store, hits, lists: streamed, wholeList = {} }: ProductsV1Options): Promise<void> {
  const { keptMaxProducts = KEPT_LIST_MAX_PRODUCTS, stepRows = LIST_STEP_ROWS } = wholeList;
  const lists = new CachedAnswers(store, LISTS_KEPT_BYTES, KEPT_ENTRIES);
  const details = new CachedAnswers(store, DETAIL_CACHE_BYTES, KEPT_ENTRIES, 'existing products');
  // The keys the routes below keep their answers under.
  hits.add({ route: '/api/v1/shop/products', answers: lists, keyOf: ({ url }) => url });
  hits.add({ route: '/api/v1/shop/product/:pk', answers: details, keyOf: ({ param }) => String(parsePk(param)) });

  resource(app, '/api/v1/shop/products', {
    GET: {
      options: {
        schema: {
          operationId: 'listProducts',
          summary: 'Every product, in pk order (not paginated), or those matching the filters',
          description: [
            `The whole catalogue in one array. Up to ${KEPT_LIST_MAX_PRODUCTS.toLocaleString('en')} products it carries a strong ETag; send it back in If-None-Match for a 304 without a body while the catalogue is unchanged. Longer lists are streamed as they are read, without an ETag. For large catalogues use the paginated v2 listing.`,
            '',
            'With `barcode` or `search`, only the matching products, in pk order (`[]` when none match).',
          ].join('\n'),
          tags: ['v1'],
          querystring: FILTER_QUERY,
          response: {
            200: jsonResponse('Every product (or every match), ordered by pk.', ProductListSchema, { ETag: ETAG_HEADER }),
            304: { description: 'Not modified: the ETag in If-None-Match is still current. No body.', type: 'null' },
            400: problemResponse('A filter is not valid; `errors` names it.'),
            503: STORE_UNAVAILABLE,
          },
        },
        // FILTER_QUERY documents the filters; productFilter checks them with messages naming the parameter.
        validatorCompiler: () => (value: unknown) => ({ value }),
      },
      handler: (request, reply) => {
        // The whole target is the key: any query parameter that selects products is part of it. Only
        // valid requests are kept, so a kept answer needs no parsing of the query.
        return lists.answer(request, reply, request.url, async () => {
          const filter = productFilter(requestAddress(request).params);
          if (hasFilter(filter)) {
            // Most filtered lists (every barcode lookup) fit one batch: kept whole.
            const matches = await store.listFilteredAfter(filter, 0, LIST_BATCH);
            if (matches.length < LIST_BATCH) return serializeOk(reply, matches.map(productWire));
            return { stream: listStream(async (after) => productsStep(await store.listFilteredAfter(filter, after, stepRows)), productsStep(matches), stepRows, streamed) };
          }
          const { count } = await store.describeCatalogue();
          if (count <= keptMaxProducts) return serializeOk(reply, (await readWholeList(store)).map(productWire));
          // HEAD needs only the headers (the same as GET's: chunked, no length): the database was reached
          // above, so that an unreachable one is still a 503, but no product is read.
          if (request.method === 'HEAD') return { stream: Readable.from([]) };
          // Read before the status line goes out, so an unreachable database is still a 503.
          const firstStep = await store.listProductsJsonAfter(0, stepRows);
          return { stream: listStream((after) => store.listProductsJsonAfter(after, stepRows), firstStep, stepRows, streamed) };
        });
      },
    },
  });

  resource(app, '/api/v1/shop/product/:pk', {
    GET: {
      options: {
        schema: {
          operationId: 'getProduct',
          summary: 'One product by its pk',
          description: 'Carries a strong ETag; send it back in If-None-Match for a 304 without a body while the product is unchanged.',
          tags: ['v1'],
          params: Type.Object({
            pk: Type.String({
              description: 'A positive decimal integer. Anything else (`abc`, `0`, `-1`, `1.5`, too many digits) names no product: 404.',
              examples: ['1'],
            }),
          }),
          response: {
            200: jsonResponse('The product.', Type.Ref('Product'), { ETag: ETAG_HEADER }),
            304: { description: 'Not modified: the ETag in If-None-Match is still current. No body.', type: 'null' },
            404: problemResponse('No product has this pk (or the pk is not a positive decimal integer).'),
            503: STORE_UNAVAILABLE,
          },
        },
      },
      handler: (request, reply) => {
        const { pk } = request.params;
        const key = parsePk(pk);
        return details.answer(request, reply, String(key), async () => {
          const product = await store.findProduct(key);
          if (product === undefined) throw new HttpProblem(404, `No product has pk ${pk}.`);
          return serializeOk(reply, productWire(product));
        });
      },
    },
  });

  resource(app, '/api/v1/shop/product/', {
    POST: {
      options: {
        bodyLimit: BODY_LIMIT_BYTES,
        // The body schema is for the document only: the domain checks the body itself, because a
        // price must be read from the number's text as written, which ajv (coercing, typing the
        // parsed value) cannot do. Params and query have no schema here, so nothing else is skipped.
        validatorCompiler: () => () => true,
        schema: {
          operationId: 'createProduct',
          summary: 'Create a product',
          description: [
            'Send `Content-Type: application/json` and an object with exactly `name`, `barcode` and `price`.',
            '',
            '*(decided)* `price` may be a decimal string or a plain JSON number; it is read exactly from its text, never as a float. Exponent forms (`1e3`, `"1e3"`), `NaN`, `Infinity`, `"12,50"`, `"-1"` and `true` are refused.',
            '',
            '*(decided)* `barcode` must be a string: a JSON number would lose leading zeros.',
            '',
            '*(decided)* An unknown field (`prise`, `pk`, ...) is a 400, so that a typo does not pass silently.',
            '',
            `The body may be at most ${BODY_LIMIT_BYTES} bytes. A rejected request changes nothing.`,
          ].join('\n'),
          tags: ['v1'],
          body: Type.Ref('NewProduct'),
          headers: Type.Object({
            'idempotency-key': Type.Optional(
              Type.String({
                description: 'Makes a retry safe: a repeat within 24 h with the same product replays the first 201 and creates nothing; with a different product it is a 422; when the product it created has been removed since, a 410. 1 to 255 visible ASCII characters, e.g. a UUID.',
              }),
            ),
          }),
          response: {
            201: jsonResponse('Created: the product with its new pk.', Type.Ref('Product'), {
              Location: Type.String({ description: 'The new product\'s address.', examples: ['/api/v1/shop/product/1'] }),
              'Idempotent-Replayed': Type.Literal('true', { description: 'Present when this answer repeats the creation an earlier request with the same Idempotency-Key made.' }),
            }),
            400: problemResponse('The body is not valid UTF-8 JSON, not an object, or breaks the product rules (`errors` lists every failing field); or it comes in a transfer coding other than chunked (`Transfer-Encoding: gzip, chunked`).'),
            409: problemResponse('Another product already has this barcode; `errors.barcode` says so.'),
            413: problemResponse(`The body is larger than ${BODY_LIMIT_BYTES} bytes (refused at once when Content-Length declares it).`),
            415: problemResponse('The Content-Type is not application/json, or the body is encoded (a Content-Encoding other than identity).'),
            410: problemResponse('The Idempotency-Key created a product that has been removed since; it is not created again.'),
            422: problemResponse('The Idempotency-Key was already used with a different product.'),
            503: STORE_UNAVAILABLE,
            507: problemResponse('Every pk up to 9007199254740991 (2^53 - 1, the largest a JSON client reads exactly) has been given out; nothing was stored.'),
          },
        },
      },
      handler: async (request, reply) => {
        const body = request.body;
        // Fastify skips parsing when there is no body at all.
        if (body === undefined) {
          throw request.headers['content-type'] === undefined
            ? new HttpProblem(415, UNSUPPORTED_MEDIA_TYPE)
            : new HttpProblem(400, 'The body is empty; send a JSON object.');
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof JsonNumber) {
          throw new HttpProblem(400, 'The body must be a JSON object with name, barcode and price.');
        }
        const checked = checkNewProduct(body as Record<string, unknown>);
        if (!checked.ok) throw new InvalidProductError(checked.errors);
        const { product, replayed } = await createProductOnce(request, store, checked.product);
        if (replayed) reply.header('Idempotent-Replayed', 'true');
        return reply.code(201).header('Location', `/api/v1/shop/product/${product.pk}`).send(productWire(product));
      },
    },
  });
}

/**
 * A `pk` from the path: plain decimal digits, at least 1. Anything else names no product, so it
 * becomes 0, which no product has.
 */
function parsePk(text: string): number {
  if (!/^[0-9]+$/.test(text)) return 0;
  const digits = text.replace(/^0+(?=[0-9])/, '');
  if (digits.length > SAFE_INTEGER_DIGITS) return 0;
  const pk = Number(digits);
  return Number.isSafeInteger(pk) ? pk : 0;
}

/** Every product, read in keyset batches: a list short enough to keep whole. */
async function readWholeList(store: CatalogueStore): Promise<Product[]> {
  const products: Product[] = [];
  for (let batch = await store.listProductsAfter(0, LIST_BATCH); ; batch = await store.listProductsAfter(batch.at(-1)!.pk, LIST_BATCH)) {
    products.push(...batch);
    if (batch.length < LIST_BATCH) return products;
  }
}
