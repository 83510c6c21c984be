import type { Generated } from 'kysely';

/** The tables as Kysely sees them. Column names are the database's, not the API's. */
export interface Database {
  product: ProductTable;
  idempotency_key: IdempotencyKeyTable;
  catalogue_state: CatalogueStateTable;
}

/** Rows of `catalogue_state` whose sums are the count and the revision (see migration 0002). */
export const STATE_SLOTS = 16;

/** Slots kept by triggers on `product`; the count and revision are their sums (see migration 0002). */
export interface CatalogueStateTable {
  id: number;
  product_count: number | string | bigint;
  revision: number | string | bigint;
}

export interface ProductTable {
  pk: Generated<number>;
  name: string;
  /** The name folded for search (foldForSearch); NULL until the store folds a name plain SQL wrote. */
  name_folded: string | null;
  barcode: string;
  /** Exact money: integer cents (bigint on PostgreSQL, INTEGER on SQLite). */
  price_cents: number | string | bigint;
}

/** Which product a POST with an `Idempotency-Key` created, so that a retry gets the same answer. */
export interface IdempotencyKeyTable {
  key: string;
  /** A digest of the request's product, to tell a retry from a different request reusing the key. */
  fingerprint: string;
  product_pk: number | string | bigint;
  /** Milliseconds since the Unix epoch. */
  created_at: number | string | bigint;
}
