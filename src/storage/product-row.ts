import { sql, type Selectable } from 'kysely';
import type { NewProduct, Product } from '../catalogue/product.js';
import { foldForSearch } from '../catalogue/search.js';
import type { ProductTable } from './schema.js';

/** The columns a product is read from. */
export const PRODUCT_COLUMNS = ['pk', 'name', 'barcode', 'price_cents'] as const;

/** The columns a new product is written to, as `newProductRow` fills them. */
export const NEW_PRODUCT_COLUMNS = ['name', 'name_folded', 'barcode', 'price_cents'] as const;

/** `PRODUCT_COLUMNS` of table `product`, for statements written in SQL. */
export const PRODUCT_SELECT = sql.raw(PRODUCT_COLUMNS.map((column) => `product.${column}`).join(', '));

/** A product as the store reads it. */
export type ProductRow = Pick<Selectable<ProductTable>, (typeof PRODUCT_COLUMNS)[number]>;

/** A new product as the store writes it. */
export interface NewProductRow {
  readonly name: string;
  /** Always written with the name, so that no search has to fold it first. */
  readonly name_folded: string;
  readonly barcode: string;
  readonly price_cents: number;
}

/** The row of `NEW_PRODUCT_COLUMNS` that stores `product`. */
export function newProductRow(product: NewProduct): NewProductRow {
  return { name: product.name, name_folded: foldForSearch(product.name), barcode: product.barcode, price_cents: product.priceCents };
}

/** A product as read; PostgreSQL returns bigint columns as strings, and every value here is below 2^53. */
export function toProduct(row: ProductRow): Product {
  return { pk: Number(row.pk), name: asText(row.name), barcode: asText(row.barcode), priceCents: Number(row.price_cents) };
}

const utf8 = new TextDecoder();

/**
 * A text column's value as text: SQLite keeps what plain SQL stored in it as it was given, a BLOB
 * (read as bytes) or a number included; read as SQLite's own CAST(… AS TEXT) reads it.
 */
export function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return utf8.decode(value);
  return String(value);
}
