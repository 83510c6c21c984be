import type { NewProduct, Product } from '../catalogue/product.js';
import type { ProductFilter } from '../catalogue/search.js';

/** The catalogue's size and its revision: a number every write to the catalogue increases. */
export interface CatalogueSummary {
  readonly count: number;
  readonly revision: number;
}

/** A page of products with the count and revision of the very snapshot it was read from. */
export interface ProductPage extends CatalogueSummary {
  readonly products: Product[];
}

/**
 * The catalogue's storage, the same for every database.
 *
 * Products are returned in `pk` order. Failures to reach the database surface as
 * `StoreUnavailableError`; every other method error is a bug.
 */
export interface CatalogueStore {
  /**
   * Stores a new product and returns it with its assigned `pk`.
   * @throws DuplicateBarcodeError when the barcode is already taken; nothing is stored then.
   */
  createProduct(product: NewProduct): Promise<Product>;

  /** The product with this `pk`, or `undefined`. */
  findProduct(pk: number): Promise<Product | undefined>;

  /**
   * The count and revision, read together from counters the writes keep (never a table scan). Every instance sharing the database sees the revision
   * change after any write, so it can key caches and ETags.
   */
  describeCatalogue(): Promise<CatalogueSummary>;

  /**
   * A number that stays the same only while the catalogue does, as far as this instance can tell: it
   * rises after every write through this store and after every change another connection or process
   * committed that the database made known (PostgreSQL: at once, by notification; SQLite: on the next
   * call). An answer built from reads made after a call may be served again while later calls return the
   * same number. Synchronous when no query is needed.
   */
  cacheGeneration(): number | Promise<number>;

  /**
   * Up to `limit` products after skipping `offset`, in `pk` order, with the count and revision of the
   * same snapshot. The offset is resolved through the `pk` index: when pks are dense (no gaps), in
   * constant time, otherwise by walking the index only.
   */
  readPage(offset: number, limit: number): Promise<ProductPage>;

  /** Up to `limit` products whose `pk` is greater than `afterPk`, in `pk` order (keyset paging). */
  listProductsAfter(afterPk: number, limit: number): Promise<Product[]>;

  /**
   * Up to `limit` products matching `filter` after skipping `offset` matches, in `pk` order, with the
   * number of matches (as `count`) and the revision, all from one snapshot. Answered from the barcode
   * and trigram indexes; a search text shorter than 3 characters reads the folded names.
   */
  readFilteredPage(filter: ProductFilter, offset: number, limit: number): Promise<ProductPage>;

  /** How many products match `filter`. */
  countMatching(filter: ProductFilter): Promise<number>;

  /** Up to `limit` products matching `filter` whose `pk` is greater than `afterPk`, in `pk` order. */
  listFilteredAfter(filter: ProductFilter, afterPk: number, limit: number): Promise<Product[]>;

  /**
   * The creation an idempotency key recorded no earlier than `notBefore`, or `undefined`.
   * Older records are treated as absent.
   */
  findKeyedCreation(key: string, notBefore: Date): Promise<KeyedCreation | undefined>;

  /**
   * Stores a new product and records `key` for it, both in one transaction: either both are
   * stored or neither. A record of the same key older than `expiredBefore` is replaced. Like
   * `createProduct`, a refused product draws no `pk`, so pks come out the same on every database.
   * @throws IdempotencyKeyTakenError when the key was recorded meanwhile by a concurrent request;
   *   DuplicateBarcodeError when the barcode is taken otherwise. Nothing is stored then.
   */
  createKeyedProduct(product: NewProduct, key: IdempotencyRecord, expiredBefore: Date): Promise<Product>;

  /** Which of `barcodes` the catalogue already holds. */
  existingBarcodes(barcodes: readonly string[]): Promise<Set<string>>;

  /**
   * Stores every product of every batch in one transaction: all or nothing.
   * @returns how many products were stored.
   * @throws DuplicateBarcodeError when a barcode is taken; nothing is stored then.
   */
  insertProducts(batches: AsyncIterable<readonly NewProduct[]>): Promise<number>;

  /**
   * Brings the catalogue in line with a price list, in one transaction: all or nothing. A product
   * whose barcode is already stored takes the list's name and price and keeps its `pk`; the others
   * are added, in list order, each drawing a `pk` only when it is stored. A product already as
   * listed is not written at all, so the catalogue's revision moves only when something changed.
   * Each barcode must appear at most once across the batches.
   * @throws DuplicateBarcodeError when a barcode is added by another writer meanwhile; nothing is
   *   stored then.
   */
  applyPriceList(batches: AsyncIterable<readonly NewProduct[]>): Promise<PriceListOutcome>;

  /** The connection pool's state, or `undefined` for a database without a pool. */
  poolStats(): PoolStats | undefined;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases every connection. The store is unusable afterwards. */
  close(): Promise<void>;
}

/** What an idempotency key remembers: which request it was, by a digest of its content. */
export interface IdempotencyRecord {
  readonly key: string;
  readonly fingerprint: string;
  readonly createdAt: Date;
}

/** A product created under an idempotency key. */
export interface KeyedCreation {
  readonly fingerprint: string;
  readonly product: Product;
}

/** What applying a price list did, by product. */
export interface PriceListOutcome {
  readonly added: number;
  /** Products whose name or price the list changed. */
  readonly changed: number;
  /** Products already as listed. */
  readonly unchanged: number;
}

/** Connections of a pool, by state. */
export interface PoolStats {
  readonly total: number;
  readonly idle: number;
  /** Queries waiting for a connection. */
  readonly waiting: number;
}
