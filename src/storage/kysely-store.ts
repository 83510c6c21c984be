import type { NewProduct, Product } from '../catalogue/product.js';
import type { ProductFilter } from '../catalogue/search.js';
import { undoAbandonedBulkWrites, waitForBulkWrite } from './bulk-write-journal.js';
import { writeNewCatalogueId } from './catalogue-state.js';
import { BulkWrites } from './bulk-writes.js';
import { ChangeReads } from './change-reads.js';
import type { ChangeSignal, StoreDialect } from './dialect.js';
import { ProductReads } from './product-reads.js';
import { ProductWrites } from './product-writes.js';
import { SearchReads } from './search-reads.js';
import { StoreContext } from './store-context.js';
import type {
  BulkOptions,
  CheckedBulkOptions,
  BulkWait,
  CacheScope,
  CatalogueState,
  CatalogueStore,
  ChangePage,
  ChangePageJson,
  WriteKind,
  WriteNotices,
  WriteWaits,
  IdempotencyRecord,
  KeyedCreation,
  ChangeConnection,
  PoolStats,
  PriceListOutcome,
  ProductPage,
  ProductsJson,
  RestoreOptions,
  RestoreOutcome,
  RunningBulkWrite,
} from './store.js';

/**
 * The one implementation of `CatalogueStore`, over any database Kysely speaks to. It keeps the cache
 * generation; the reads and writes themselves are in the parts it is made of.
 */
export class KyselyCatalogueStore implements CatalogueStore {
  readonly #dialect: StoreDialect;
  readonly #reads: ProductReads;
  readonly #search: SearchReads;
  readonly #writes: ProductWrites;
  readonly #bulk: BulkWrites;
  readonly #changeReads: ChangeReads;
  readonly #changes: ChangeSignal | undefined;
  /** Other processes' writes, heard from them; and this store's, told to them when the database's notice is late. */
  readonly #notices: WriteNotices | undefined;
  #generation = 0;
  /** Rises as `#generation` does, but not for a write that only added products. */
  #changesGeneration = 0;
  /** What the change signal (or, negated, the revision) last said; and its count of changes that were not only additions. */
  #lastSeen: number | undefined;
  #lastSeenChanges: number | undefined;

  readonly #context: StoreContext;

  constructor(dialect: StoreDialect, notices?: WriteNotices) {
    const context = new StoreContext(dialect, () => this.#changedHere());
    this.#context = context;
    this.#dialect = dialect;
    this.#reads = new ProductReads(context);
    this.#search = new SearchReads(context, async () => (await this.#reads.describeCatalogue()).revision);
    this.#writes = new ProductWrites(context);
    this.#bulk = new BulkWrites(context);
    this.#changeReads = new ChangeReads(context);
    this.#changes = dialect.changes;
    this.#notices = notices;
  }

  cacheGenerationNow(scope: CacheScope = 'catalogue'): number | undefined {
    const changes = this.#changes;
    const seen = changes?.current();
    if (seen === undefined) return undefined;
    const notices = this.#notices;
    // A signal that cannot tell additions apart counts every change as one that may change any product.
    const seenChanges = (changes!.existingChanges?.() ?? seen) + (notices?.heardChanges() ?? 0);
    return this.#observe(seen + (notices?.heard() ?? 0), seenChanges, scope);
  }

  cacheGeneration(scope: CacheScope = 'catalogue'): number | Promise<number> {
    const now = this.cacheGenerationNow(scope);
    if (now !== undefined) return now;
    // Revisions are kept apart from the signal's numbers (negative), so that switching between the two
    // always counts as a change; a revision cannot tell an addition from a change.
    return this.describeCatalogue().then(({ revision }) => this.#observe(-1 - revision, -1 - revision, scope));
  }

  #observe(seen: number, seenChanges: number, scope: CacheScope): number {
    if (seen !== this.#lastSeen) {
      this.#lastSeen = seen;
      this.#generation += 1;
    }
    if (seenChanges !== this.#lastSeenChanges) {
      this.#lastSeenChanges = seenChanges;
      this.#changesGeneration += 1;
    }
    return scope === 'catalogue' ? this.#generation : this.#changesGeneration;
  }

  /**
   * Runs a write of this store and counts it, committed or not: its own commits are not signalled to it
   * in time. Where the database's notice is late, the processes beside this one are told before the
   * write is answered, so that its client reads it back through any of them.
   */
  async #written<T>(write: Promise<T>, kind: WriteKind = 'changes'): Promise<T> {
    // A write that failed did at most part of what it does, so its kind holds (a refused create
    // changed no product); a bulk write undoing its steps counts each as it commits (#changedHere).
    try {
      return await write;
    } finally {
      this.#generation += 1;
      if (kind === 'changes') this.#changesGeneration += 1;
      if (this.#changes?.late === true) await this.#notices?.announce(kind);
    }
  }

  createProduct(product: NewProduct): Promise<Product> {
    return this.#written(this.#writes.createProduct(product), 'adds');
  }

  createKeyedProduct(product: NewProduct, record: IdempotencyRecord, expiredBefore: Date): Promise<Product> {
    return this.#written(this.#writes.createKeyedProduct(product, record, expiredBefore), 'adds');
  }

  findKeyedCreation(key: string, notBefore: Date): Promise<KeyedCreation | undefined> {
    return this.#writes.findKeyedCreation(key, notBefore);
  }

  insertProducts(batches: AsyncIterable<readonly NewProduct[]>, options?: CheckedBulkOptions): Promise<number> {
    return this.#written(this.#bulk.insertProducts(batches, options), 'adds');
  }

  applyPriceList(batches: AsyncIterable<readonly NewProduct[]>, options?: CheckedBulkOptions): Promise<PriceListOutcome> {
    return this.#written(this.#bulk.applyPriceList(batches, options));
  }

  removeProducts(batches: AsyncIterable<readonly string[]>, options?: BulkOptions): Promise<number> {
    return this.#written(this.#bulk.removeProducts(batches, options));
  }

  restoreProducts(batches: AsyncIterable<readonly Product[]>, options: RestoreOptions): Promise<RestoreOutcome> {
    return this.#written(this.#bulk.restoreProducts(batches, options));
  }

  renewCatalogueId(): Promise<string> {
    return this.#written(this.#context.run(() => writeNewCatalogueId(this.#context.writeDb)));
  }

  waitForBulkWrite(wait: BulkWait, onAbandonedUndone?: (write: RunningBulkWrite) => void): Promise<void> {
    // It may undo an abandoned bulk write: a write.
    return this.#written(waitForBulkWrite(this.#context, wait, onAbandonedUndone));
  }

  undoAbandonedBulkWrites(): Promise<number> {
    // Each undo step counts as it commits (#changedHere); nothing else: this runs every half minute,
    // and kept answers must outlive it when there is nothing to undo.
    return undoAbandonedBulkWrites(this.#context);
  }

  /** A commit of this store's that may have changed any product, in the middle of longer work. */
  #changedHere(): void {
    this.#generation += 1;
    this.#changesGeneration += 1;
  }

  existingBarcodes(barcodes: readonly string[]): Promise<Set<string>> {
    return this.#bulk.existingBarcodes(barcodes);
  }

  findProduct(pk: number): Promise<Product | undefined> {
    return this.#reads.findProduct(pk);
  }

  describeCatalogue(): Promise<CatalogueState> {
    return this.#reads.describeCatalogue();
  }

  readPage(offset: number, limit: number): Promise<ProductPage> {
    return this.#reads.readPage(offset, limit);
  }

  listProductsAfter(afterPk: number, limit: number): Promise<Product[]> {
    return this.#reads.listProductsAfter(afterPk, limit);
  }

  listProductsJsonAfter(afterPk: number, limit: number): Promise<ProductsJson> {
    return this.#reads.listProductsJsonAfter(afterPk, limit);
  }

  readFilteredPage(filter: ProductFilter, offset: number, limit: number, countAtMost: number): Promise<ProductPage> {
    return this.#search.readFilteredPage(filter, offset, limit, countAtMost);
  }

  countMatching(filter: ProductFilter): Promise<number> {
    return this.#search.countMatching(filter);
  }

  listFilteredAfter(filter: ProductFilter, afterPk: number, limit: number): Promise<Product[]> {
    return this.#search.listFilteredAfter(filter, afterPk, limit);
  }

  readChanges(since: number, limit: number): Promise<ChangePage> {
    return this.#changeReads.readChanges(since, limit);
  }

  readChangesJson(since: number, limit: number): Promise<ChangePageJson> {
    return this.#changeReads.readChangesJson(since, limit);
  }

  foldInBackground(): void {
    this.#search.foldInBackground();
  }

  poolStats(): PoolStats | undefined {
    return this.#dialect.poolStats?.();
  }

  changeConnection(): ChangeConnection | undefined {
    return this.#changes?.connection?.();
  }

  writeWaits(): WriteWaits | undefined {
    return this.#dialect.writeWaits?.();
  }

  ping(): Promise<void> {
    return this.#reads.ping();
  }

  async close(): Promise<void> {
    await this.#search.close();
    await this.#dialect.close();
  }
}
