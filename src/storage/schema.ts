import type { Generated } from 'kysely';

/** The tables as Kysely sees them. Column names are the database's, not the API's. */
export interface Database {
  product: ProductTable;
}

export interface ProductTable {
  pk: Generated<number>;
  name: string;
  barcode: string;
  /** Exact money: integer cents (bigint on PostgreSQL, INTEGER on SQLite). */
  price_cents: number | string | bigint;
}

export type DialectKind = 'sqlite' | 'postgres';
