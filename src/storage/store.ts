import type { NewProduct, Product } from '../catalogue/product.js';

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

  /** How many products the catalogue holds, read from a counter the writes keep (never a table scan). */
  countProducts(): Promise<number>;

  /**
   * The count and revision, read together. Every instance sharing the database sees the revision
   * change after any write, so it can key caches and ETags.
   */
  describeCatalogue(): Promise<CatalogueSummary>;

  /**
   * Up to `limit` products after skipping `offset`, in `pk` order, with the count and revision of the
   * same snapshot. The offset is resolved through the `pk` index: when pks are dense (no gaps), in
   * constant time, otherwise by walking the index only.
   */
  readPage(offset: number, limit: number): Promise<ProductPage>;

  /** Up to `limit` products after skipping `offset` of them, in `pk` order. */
  listProducts(offset: number, limit: number): Promise<Product[]>;

  /** Up to `limit` products whose `pk` is greater than `afterPk`, in `pk` order (keyset paging). */
  listProductsAfter(afterPk: number, limit: number): Promise<Product[]>;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases every connection. The store is unusable afterwards. */
  close(): Promise<void>;
}
