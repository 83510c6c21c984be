import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { IdempotencyKeyTakenError } from '../../catalogue/errors.js';
import type { NewProduct, Product } from '../../catalogue/product.js';
import type { CatalogueStore, KeyedCreation } from '../../storage/store.js';
import { HttpProblem } from '../contract/problem.js';

/** How long a key is remembered: a day, so that a till retrying after an outage still gets its answer. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface Creation {
  readonly product: Product;
  /** True when an earlier request with the same key created the product and this one only repeats the answer. */
  readonly replayed: boolean;
}

/**
 * Creates a product, at most once per `Idempotency-Key`: a request that repeats an earlier key with
 * the same product gets the first request's product back and creates nothing; the same key with a
 * different product is refused (422). Without the header it is a plain create.
 *
 * The key is recorded in the same transaction as the product, so concurrent requests with one key
 * create one product however many instances share the database.
 */
export async function createProductOnce(request: FastifyRequest, store: CatalogueStore, product: NewProduct): Promise<Creation> {
  const key = idempotencyKey(request);
  if (key === undefined) return { product: await store.createProduct(product), replayed: false };

  const fingerprint = fingerprintOf(product);
  const now = new Date();
  const cutoff = new Date(now.getTime() - IDEMPOTENCY_TTL_MS);
  const earlier = await store.findKeyedCreation(key, cutoff);
  if (earlier !== undefined) return replay(earlier, fingerprint, product);
  try {
    return { product: await store.createKeyedProduct(product, { key, fingerprint, createdAt: now }, cutoff), replayed: false };
  } catch (error) {
    // A concurrent request with this key won the race; then this one is its retry.
    if (error instanceof IdempotencyKeyTakenError) return replay(error.creation, fingerprint, product);
    throw error;
  }
}

/**
 * The answer to a request repeating an earlier key: the product it created, as it is now. A product
 * removed since has no answer to repeat, and creating it again would undo the removal: 410. So does
 * one whose pk another product holds now (a backup restored since, from before it or another
 * catalogue): its barcode, which nothing else changes, is not the request's.
 */
function replay(earlier: KeyedCreation, fingerprint: string, requested: NewProduct): Creation {
  if (earlier.fingerprint !== fingerprint) {
    throw new HttpProblem(422, 'This Idempotency-Key was already used for a different product; use a new key for a new product.', {
      errors: { 'Idempotency-Key': ['Already used with a different body.'] },
    });
  }
  if (earlier.product === undefined) {
    throw new HttpProblem(410, `The product this Idempotency-Key created (pk ${earlier.pk}) has been removed from the catalogue since; it is not created again.`, {
      errors: { 'Idempotency-Key': ['Its product has been removed.'] },
    });
  }
  if (earlier.product.barcode !== requested.barcode) {
    throw new HttpProblem(410, `The product this Idempotency-Key created (pk ${earlier.pk}) is no longer in the catalogue: another product is under its pk since (a restored backup, or plain SQL that moved products). It is not created again.`, {
      errors: { 'Idempotency-Key': ['Its product is no longer in the catalogue.'] },
    });
  }
  return { product: earlier.product, replayed: true };
}

function idempotencyKey(request: FastifyRequest): string | undefined {
  const value = request.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value)) {
    throw new HttpProblem(400, 'The Idempotency-Key header is not valid.', {
      errors: { 'Idempotency-Key': ['Send one key of 1 to 255 visible ASCII characters, e.g. a UUID.'] },
    });
  }
  return value;
}

/** The product as stored, so that `12.5` and `"12.50"` or a name with extra spaces count as the same request. */
function fingerprintOf(product: NewProduct): string {
  return createHash('sha256').update(JSON.stringify([product.name, product.barcode, product.priceCents])).digest('hex');
}
