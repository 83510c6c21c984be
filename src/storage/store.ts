import type { NewProduct, Product } from '../catalogue/product.js';

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

  /** How many products the catalogue holds. */
  countProducts(): Promise<number>;

  /** Up to `limit` products after skipping `offset` of them, in `pk` order. */
  listProducts(offset: number, limit: number): Promise<Product[]>;

  /** Up to `limit` products whose `pk` is greater than `afterPk`, in `pk` order (keyset paging). */
  listProductsAfter(afterPk: number, limit: number): Promise<Product[]>;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases every connection. The store is unusable afterwards. */
  close(): Promise<void>;
}
