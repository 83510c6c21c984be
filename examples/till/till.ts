import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { components, paths } from './catalogue-api.js';

export type Product = components['schemas']['Product'];
export type NewProduct = components['schemas']['NewProduct'];
export type PageItem = components['schemas']['Page']['results'][number];
export type Problem = components['schemas']['Problem'];

/** An answer the till cannot go on from, with the service's problem document. */
export class CatalogueError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined) {
    super(problem?.detail ?? `The catalogue answered ${status}.`);
    this.name = 'CatalogueError';
    this.status = status;
    this.problem = problem;
  }
}

export interface TillOptions {
  /** Where the catalogue is, e.g. `http://localhost:8000`. */
  readonly baseUrl: string;
  /** The deployment's API_TOKEN, where creating needs one. */
  readonly token?: string | undefined;
}

export interface Creation {
  readonly product: Product;
  /** True when the service had already created this product for the same key: a retry, not a new product. */
  readonly replayed: boolean;
}

/**
 * A till's view of the catalogue, typed from the service's own OpenAPI document: scan a barcode,
 * read a product, page through the catalogue, and create a product safely retried.
 */
export function createTill({ baseUrl, token }: TillOptions) {
  const client = createClient<paths>({ baseUrl, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });

  return {
    /**
     * The product a scanned barcode names, or `undefined` when the catalogue has none, asked of the
     * service (the barcode filter answers from an index). A 12-digit UPC-A is matched as the EAN-13 it
     * stands for (a leading 0). For look-ups without a round trip, keep an OfflineCopy.
     */
    async scan(barcode: string): Promise<Product | undefined> {
      const { data, error, response } = await client.GET('/api/v1/shop/products', { params: { query: { barcode } } });
      if (data === undefined) throw new CatalogueError(response.status, error);
      return data[0];
    },

    /** One product by its pk, or `undefined` when no product has it. */
    async product(pk: number): Promise<Product | undefined> {
      const { data, error, response } = await client.GET('/api/v1/shop/product/{pk}', { params: { path: { pk: String(pk) } } });
      if (response.status === 404) return undefined;
      if (data === undefined) throw new CatalogueError(response.status, error);
      return data;
    },

    /**
     * The whole catalogue a page at a time, in pk order, following the service's `next` links
     * (limit/offset paging, the service's default).
     */
    async *pages(limit = 100): AsyncGenerator<PageItem[]> {
      let query: { limit?: string; offset?: string } = { limit: String(limit) };
      for (;;) {
        const { data, error, response } = await client.GET('/api/v2/shop/products', { params: { query } });
        if (data === undefined) throw new CatalogueError(response.status, error);
        if (data.results.length > 0) yield data.results;
        if (data.next === null) return;
        const next = new URL(data.next).searchParams;
        query = { limit: next.get('limit') ?? undefined, offset: next.get('offset') ?? undefined };
      }
    },

    /**
     * Creates a product. Send the same `idempotencyKey` again after a lost answer: the service then
     * answers with the product it created the first time instead of creating another.
     *
     * @throws CatalogueError with the problem document for a refused product (400, 409, 422, ...).
     */
    async create(product: NewProduct, idempotencyKey: string = randomUUID()): Promise<Creation> {
      const { data, error, response } = await client.POST('/api/v1/shop/product', {
        body: product,
        params: { header: { 'idempotency-key': idempotencyKey } },
      });
      if (data === undefined) throw new CatalogueError(response.status, error);
      return { product: data, replayed: response.headers.get('Idempotent-Replayed') === 'true' };
    },
  };
}

export type Till = ReturnType<typeof createTill>;
