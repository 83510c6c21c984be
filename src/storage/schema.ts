import type { Generated } from 'kysely';

/** The tables as Kysely sees them. Column names are the database's, not the API's. */
export interface Database {
  product: ProductTable;
  catalogue_state: CatalogueStateTable;
}

/** Slots kept by triggers on `product`; the count and revision are their sums (see migration 0002). */
export interface CatalogueStateTable {
  id: number;
  product_count: number | string | bigint;
  revision: number | string | bigint;
}

export interface ProductTable {
  pk: Generated<number>;
  name: string;
  barcode: string;
  /** Exact money: integer cents (bigint on PostgreSQL, INTEGER on SQLite). */
  price_cents: number | string | bigint;
}

export type DialectKind = 'sqlite' | 'postgres';
