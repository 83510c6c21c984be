import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { InvalidProductError } from '../catalogue/errors.js';
import { checkNewProduct } from '../catalogue/product.js';
import type { CatalogueStore } from '../storage/store.js';
import type { CorsSettings } from './cors.js';
import { BODY_LIMIT_BYTES, UNSUPPORTED_MEDIA_TYPE } from './json-body.js';
import { HttpProblem, ProblemSchema } from './problem.js';
import { resource } from './resource.js';
import { RevisionCache } from './revision-cache.js';
import { sendTagged, serialized, tagBody } from './conditional.js';
import { NewProductSchema, ProductListSchema, ProductSchema } from './schemas.js';
import { productWire } from './wire.js';

/** Rows fetched per query while the whole list is streamed. */
const LIST_BATCH = 2_000;

/**
 * Lists of up to this many products are also kept whole for the revision they were read at; longer
 * ones are only ever streamed, so memory stays flat however large the catalogue grows.
 */
const CACHED_LIST_MAX_PRODUCTS = 50_000;

export interface ProductsV1Options {
  readonly store: CatalogueStore;
  readonly cors: CorsSettings;
}

/** v1: the whole catalogue in one array, one product by `pk`, and creation. */
export async function productsV1(app: FastifyInstance, { store, cors }: ProductsV1Options): Promise<void> {
  const lists = new RevisionCache<string>(CACHED_LIST_MAX_PRODUCTS * 400, (text) => text.length);

  resource(app, cors, '/api/v1/shop/products', {
    GET: {
      options: {
        schema: {
          summary: 'Every product, in pk order (not paginated)',
          tags: ['v1'],
          response: { 200: ProductListSchema },
        },
      },
      handler: async (request, reply) => {
        reply.type('application/json; charset=utf-8');
        // HEAD needs only the headers (the same as GET's: chunked, no length); do not read the catalogue.
        if (request.method === 'HEAD') return reply.send(Readable.from([]));
        const before = await store.describeCatalogue();
        const cached = lists.get(before.revision, 'list');
        if (cached !== undefined) return reply.send(Readable.from([cached]));
        // Few chunks in flight per response: memory per slow client stays near one batch.
        if (before.count > CACHED_LIST_MAX_PRODUCTS) return reply.send(Readable.from(streamList(store), { highWaterMark: 2 }));
        return reply.send(
          Readable.from(
            streamList(store, async (text) => {
              // Batches are separate reads: the text is one snapshot only if no write came in between.
              const after = await store.describeCatalogue();
              if (after.revision === before.revision) lists.set(before.revision, 'list', text);
            }),
            { highWaterMark: 2 },
          ),
        );
      },
    },
  });

  resource(app, cors, '/api/v1/shop/product/:pk', {
    GET: {
      options: {
        schema: {
          summary: 'One product by its pk',
          description: 'Carries a strong ETag; send it back in If-None-Match for a 304 without a body while the product is unchanged.',
          tags: ['v1'],
          response: { 200: ProductSchema, 304: Type.Null({ description: 'Not modified: the ETag given is still current.' }), 404: ProblemSchema },
        },
      },
      handler: async (request, reply) => {
        const { pk } = request.params as { pk: string };
        const product = await store.findProduct(parsePk(pk));
        if (product === undefined) throw new HttpProblem(404, `No product has pk ${pk}.`);
        return sendTagged(request, reply, tagBody(serialized(reply.serialize(productWire(product)))));
      },
    },
  });

  resource(app, cors, '/api/v1/shop/product/', {
    POST: {
      options: {
        bodyLimit: BODY_LIMIT_BYTES,
        schema: {
          summary: 'Create a product',
          tags: ['v1'],
          response: { 201: ProductSchema, 400: ProblemSchema, 409: ProblemSchema, 413: ProblemSchema, 415: ProblemSchema },
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
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          throw new HttpProblem(400, 'The body must be a JSON object with name, barcode and price.');
        }
        const checked = checkNewProduct(body as Record<string, unknown>);
        if (!checked.ok) throw new InvalidProductError(checked.errors);
        const product = await store.createProduct(checked.product);
        return reply.code(201).header('Location', `/api/v1/shop/product/${product.pk}`).send(productWire(product));
      },
    },
  });
  void NewProductSchema;
}

/**
 * A `pk` from the path: plain decimal digits, at least 1. Anything else names no product, so it
 * becomes 0, which no product has.
 */
function parsePk(text: string): number {
  if (!/^[0-9]{1,16}$/.test(text)) return 0;
  const pk = Number(text);
  return Number.isSafeInteger(pk) ? pk : 0;
}

/**
 * The list as JSON text, fetched in keyset batches so that neither the whole table nor a long-held
 * database connection is needed, whatever the catalogue's size. `whole`, when given, receives the
 * complete text once the last chunk is out.
 */
async function* streamList(store: CatalogueStore, whole?: (text: string) => Promise<void>): AsyncGenerator<string> {
  const chunks: string[] | undefined = whole === undefined ? undefined : [];
  const emit = (chunk: string): string => {
    chunks?.push(chunk);
    return chunk;
  };
  let after = 0;
  let first = true;
  yield emit('[');
  for (;;) {
    const batch = await store.listProductsAfter(after, LIST_BATCH);
    if (batch.length === 0) break;
    let chunk = '';
    for (const product of batch) {
      chunk += (first ? '' : ',') + JSON.stringify(productWire(product));
      first = false;
    }
    yield emit(chunk);
    after = batch[batch.length - 1]!.pk;
    if (batch.length < LIST_BATCH) break;
  }
  yield emit(']');
  if (whole !== undefined && chunks !== undefined) await whole(chunks.join(''));
}
