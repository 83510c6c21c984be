import type { Generated } from 'kysely';

/** The tables as Kysely sees them. Column names are the database's, not the API's. */
export interface Database {
  product: ProductTable;
  idempotency_key: IdempotencyKeyTable;
  catalogue_state: CatalogueStateTable;
  catalogue_change: CatalogueChangeTable;
  bulk_write: BulkWriteTable;
  bulk_undo: BulkUndoTable;
}

/**
 * Rows of `catalogue_state` that migration 0002 made; since 0007 only row 0 is kept. Kept for
 * 0002, which databases created before 0007 have run as it was.
 */
export const STATE_SLOTS = 16;

/** The catalogue's state, in row 0, kept by triggers on `product` (migrations 0002 and 0007). */
export interface CatalogueStateTable {
  id: number;
  product_count: number | string | bigint;
  /** Raised by every write to `product`. */
  revision: number | string | bigint;
  /** The last version drawn: that of the latest change to a product. */
  version: number | string | bigint;
  /**
   * The catalogue's identity, which the change feed carries: renewed whenever its history is cut (a
   * restore), so that a copy made from the history before tells it is not of this catalogue (migration 0011).
   */
  catalogue_id: string | null;
}

/** The version of each product's last change, removals included (its product is then gone). */
export interface CatalogueChangeTable {
  pk: number | string | bigint;
  version: number | string | bigint;
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

/** A bulk write under way, or one that failed or was interrupted and is still to be undone. */
export interface BulkWriteTable {
  id: Generated<number>;
  /** What it is, as the operator would say it: `import`, `price list`, `removal`. */
  kind: string;
  /** Which process runs it, so that only that process writes its steps. */
  owner: string;
  /** `writing`; `undoing` once it failed; `finishing` once it is done and only its journal is left. */
  state: string;
  /** Milliseconds since the Unix epoch. */
  started_at: number | string | bigint;
  /** When its owner last showed it alive; long ago, and the write is abandoned. */
  heartbeat_at: number | string | bigint;
}

/** How to undo one part of a bulk write's step. */
export interface BulkUndoTable {
  id: Generated<number>;
  write_id: number | string | bigint;
  /** `added`: products pk_from..pk_to were added; `changed`, `removed`: product pk_from was, as the row says. */
  action: string;
  pk_from: number | string | bigint;
  pk_to: number | string | bigint;
  name: string | null;
  name_folded: string | null;
  barcode: string | null;
  price_cents: number | string | bigint | null;
}
