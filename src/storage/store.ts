import type { NewProduct, Product } from '../catalogue/product.js';
import type { ProductFilter } from '../catalogue/search.js';
import type { ChangeConnection, PoolStats, WriteWaits } from './dialect.js';

export type { ChangeConnection, PoolStats, WriteWaits } from './dialect.js';

/** The catalogue's size and its revision: a number every write to the catalogue increases. */
export interface CatalogueSummary {
  readonly count: number;
  readonly revision: number;
}

/** The summary with the catalogue's version: that of the last change to any product. */
export interface CatalogueState extends CatalogueSummary {
  readonly version: number;
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
  describeCatalogue(): Promise<CatalogueState>;

  /**
   * A number that stays the same only while the catalogue does, as far as this instance can tell: it
   * rises after every write through this store and after every change another connection or process
   * committed that the database made known (PostgreSQL: at once, by notification; SQLite: on the next
   * call). An answer built from reads made after a call may be served again while later calls return the
   * same number. Synchronous when no query is needed. For `existing products` it does not rise for a
   * write known to have only added products (a create, an import); where the database's notice cannot
   * tell (SQLite's, of another process's commit), it rises as for `catalogue`.
   */
  cacheGeneration(scope?: CacheScope): number | Promise<number>;

  /**
   * `cacheGeneration()` when no query is needed to know it, else `undefined` (and nothing is asked of
   * the database): for answers that go another way when it is not known at once.
   */
  cacheGenerationNow(scope?: CacheScope): number | undefined;

  /**
   * Up to `limit` products after skipping `offset`, in `pk` order, with the count and revision of the
   * same snapshot. The offset is resolved through the `pk` index: when pks are dense (no gaps), in
   * constant time, otherwise by walking the index only.
   */
  readPage(offset: number, limit: number): Promise<ProductPage>;

  /** Up to `limit` products whose `pk` is greater than `afterPk`, in `pk` order (keyset paging). */
  listProductsAfter(afterPk: number, limit: number): Promise<Product[]>;

  /**
   * The same products as `listProductsAfter`, as the JSON the API writes for them, written by the
   * database and joined by commas: a step of the whole list as it is sent.
   */
  listProductsJsonAfter(afterPk: number, limit: number): Promise<ProductsJson>;

  /**
   * Up to `limit` products matching `filter` after skipping `offset` matches, in `pk` order, with the
   * number of matches counted up to `countAtMost` (as `count`: the number of matches, or `countAtMost`
   * when that many or more match) and the revision, all from one snapshot. Matches are read no further
   * than the page and the bound need. Answered from the barcode and trigram indexes, or by walking the
   * products in pk order where the text is in many names; a search text shorter than 3 characters reads
   * the folded names, until the bound is counted and the page read.
   */
  readFilteredPage(filter: ProductFilter, offset: number, limit: number, countAtMost: number): Promise<ProductPage>;

  /** How many products match `filter`, exactly: every match is read. */
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
   * Stores every product of every batch, once `options.check` (if given) has passed: all or nothing.
   * Written in short steps (the write lock is never held for long), which readers see land one by one;
   * on failure the steps done are undone.
   * @returns how many products were stored.
   * @throws DuplicateBarcodeError when a barcode is taken; nothing is stored then.
   *   BulkWriteRunningError when another bulk write is under way.
   */
  insertProducts(batches: AsyncIterable<readonly NewProduct[]>, options?: CheckedBulkOptions): Promise<number>;

  /**
   * Brings the catalogue in line with a price list: all or nothing, in short steps as
   * `insertProducts`. A product whose barcode is already stored takes the list's name and price and
   * keeps its `pk`; the others are added, in list order. A product already as listed is not written
   * at all, so it gets no new version. Each barcode must appear at most once across the batches.
   * @throws DuplicateBarcodeError when a barcode is added by another writer meanwhile; nothing is
   *   stored then. BulkWriteRunningError when another bulk write is under way.
   */
  applyPriceList(batches: AsyncIterable<readonly NewProduct[]>, options?: CheckedBulkOptions): Promise<PriceListOutcome>;

  /**
   * Removes the products with these barcodes: all or nothing, in short steps as `insertProducts`.
   * A removed product's `pk` is never used again; its barcode is free for a new product.
   * @returns how many products were removed.
   * @throws UnknownBarcodesError naming barcodes no product has; nothing is removed then.
   *   BulkWriteRunningError when another bulk write is under way.
   */
  removeProducts(batches: AsyncIterable<readonly string[]>, options?: BulkOptions): Promise<number>;

  /**
   * Loads products with their own pks (a backup the export wrote): all or nothing, in short steps as
   * `insertProducts`. With `replace`, the products in the catalogue when it starts are removed first
   * (in the same bulk write: undone with it); without, the catalogue must be empty. From before
   * `check` until the restore has finished (or been undone), creates are refused (RestoreRunningError).
   * Before writing, pks up to the highest `check` found are reserved (later creates follow it) and the
   * catalogue gets a new identity, so that copies kept through the change feed start again.
   * @throws CatalogueNotEmptyError when the catalogue holds products and `replace` is not set;
   *   BulkWriteRunningError; nothing is changed then. DuplicateBarcodeError when another writer took a
   *   barcode meanwhile: what was written is undone, but the identity and the reserved pks stay new.
   */
  restoreProducts(batches: AsyncIterable<readonly Product[]>, options: RestoreOptions): Promise<RestoreOutcome>;

  /**
   * Gives the catalogue a new identity: for after its database was put back from a backup behind the
   * store's back, which brings back the identity the backup had.
   * @returns the new identity.
   */
  renewCatalogueId(): Promise<string>;

  /**
   * Resolves once no bulk write is under way (one whose process died is undone first, as before any
   * bulk write). While one is, it looks again every second until `wait.until`, telling
   * `wait.onWaiting`; it holds no lock and keeps no query open in between.
   * @throws BulkWriteRunningError naming the one still under way then.
   */
  waitForBulkWrite(wait: BulkWait, onAbandonedUndone?: (write: RunningBulkWrite) => void): Promise<void>;

  /**
   * Undoes bulk writes whose process died (not seen alive for two minutes), so that what they had
   * written does not stay. Called by a running service now and then, and before every bulk write.
   * @returns how many were undone.
   */
  undoAbandonedBulkWrites(): Promise<number>;

  /**
   * The changes to products with a version above `since`, oldest first, at most `limit` of them, with
   * the catalogue's version, all from one snapshot. A change carries the product as it is now, or
   * none when it was removed; with `since` 0 removed products are left out.
   */
  readChanges(since: number, limit: number): Promise<ChangePage>;

  /**
   * The same page as `readChanges`, with its changes already written as JSON by the database: for
   * pages of thousands of changes (a till's whole copy), where a row object per change costs more
   * than the answer's bytes. Each change has the form of the feed's `Change` (`version`, `pk`,
   * `product`: `pk`, `name`, `barcode`, `price` as a decimal string, or `null`).
   */
  readChangesJson(since: number, limit: number): Promise<ChangePageJson>;

  /** The connection pool's state, or `undefined` for a database without a pool. */
  poolStats(): PoolStats | undefined;

  /**
   * The state of the connection that hears other connections' commits (PostgreSQL; it opens on the
   * first cached read), or `undefined` where there is none (SQLite reads them off the file).
   */
  changeConnection(): ChangeConnection | undefined;

  /**
   * How this store's writes have waited for another connection's write lock since it opened, or
   * `undefined` where the database does not tell (PostgreSQL: see pg_locks).
   */
  writeWaits(): WriteWaits | undefined;

  /**
   * Starts folding, in the background, the names written straight into the database without their
   * folded copy (plain SQL, a bulk load), a batch per transaction. Until they are all folded a search
   * fails with SearchCatchingUpError (unless only a few are left, which it folds itself).
   */
  foldInBackground(): void;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases every connection. The store is unusable afterwards. */
  close(): Promise<void>;
}

/** A product's last change: its version, and the product as it is now (`undefined`: removed). */
export interface Change {
  readonly version: number;
  readonly pk: number;
  readonly product: Product | undefined;
}

/** A page of the change feed. */
export interface ChangePage {
  /** The catalogue's identity, from the same snapshot: another one than before means the history was cut (a restore). */
  readonly catalogue: string;
  /** The catalogue's version in the snapshot the changes were read from. */
  readonly version: number;
  readonly changes: readonly Change[];
  /** Whether changes after the last one were left out for the limit. */
  readonly more: boolean;
}

/**
 * How the processes serving one catalogue side by side (`WORKERS`) hear of each other's writes
 * without waiting for the database's own notice, which can come after the writer has answered and its
 * client has asked again through another process.
 */
export interface WriteNotices {
  /** Tells the other processes of a write of this kind; resolves once each has taken note, or gave no sign in time. Never rejects. */
  announce(kind: WriteKind): Promise<void>;
  /** How many writes the other processes have announced so far. */
  heard(): number;
  /** How many of those were of the kind `changes`. */
  heardChanges(): number;
}

/**
 * What a kept answer is read from, and so which writes make it stale: `catalogue`, the catalogue as a
 * whole (every write); `existing products`, products that exist, one by one: a write that only adds
 * products leaves such an answer as it was (an answer for a product not found must not be kept).
 */
export type CacheScope = 'catalogue' | 'existing products';

/**
 * What a write may have done to the products: `adds` only added new ones (every product that existed
 * is as it was); `changes` may have changed or removed any.
 */
export type WriteKind = 'adds' | 'changes';

/** Products as `listProductsJsonAfter` reads them. */
export interface ProductsJson {
  /** Their JSON objects joined by commas, without brackets (empty for none): text, or its UTF-8 bytes where the database hands them over so. */
  readonly json: string | Uint8Array;
  /** How many products it holds. */
  readonly count: number;
  /** The pk of the last of them; `undefined` when there are none. */
  readonly lastPk: number | undefined;
}

/** A page of the change feed as `readChangesJson` reads it. */
export interface ChangePageJson {
  /** The catalogue's identity, from the same snapshot. */
  readonly catalogue: string;
  /** The catalogue's version in the snapshot the changes were read from. */
  readonly version: number;
  /** The changes as a JSON array, in version order: text, or its UTF-8 bytes where the database hands them over so. */
  readonly changesJson: string | Uint8Array;
  /** The version of the last change in it; `undefined` when it has none. */
  readonly lastVersion: number | undefined;
  /** Whether changes after the last one were left out for the limit. */
  readonly more: boolean;
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
  readonly pk: number;
  /** The product as it is now; `undefined` when it has been removed since. */
  readonly product: Product | undefined;
}

/** How a bulk write waits its turn behind the one under way, instead of failing at once. */
export interface BulkWait {
  /** Until when to wait, as `Date.now()` counts; `Infinity`: for as long as the other runs. */
  readonly until: number;
  /** Told of the bulk write under way when the wait begins and about once a second while it lasts. */
  onWaiting?(running: RunningBulkWrite): void;
}

/** A bulk write under way, as a waiting one sees it. */
export interface RunningBulkWrite {
  /** What it does: an import, a price list, a removal. */
  readonly kind: string;
  /** The process that runs it: its machine, process id and a random part. */
  readonly owner: string;
  readonly startedAt: Date;
}

/** What a caller of a bulk write is told as it goes. */
export interface BulkOptions {
  /**
   * Wait for the bulk write under way, if any, as `waitForBulkWrite` does; without it, another bulk
   * write under way fails this one at once.
   */
  readonly wait?: BulkWait;
  /**
   * Stops the bulk write once aborted: between steps, or while the next rows are read; what it wrote
   * is undone and it fails with the signal's reason.
   */
  readonly signal?: AbortSignal;
  /** Before it started, it undid an abandoned bulk write (its process had stopped half-way): this one. */
  onAbandonedUndone?(write: RunningBulkWrite): void;
  /** It failed after `steps` steps, which are being undone now. */
  onUndo?(done: { readonly steps: number }): void;
  /**
   * The undo found the database away (cut off, restarting, locked) and tries again, for up to
   * `undoRetryMs` (default UNDO_RETRY_MS, bulk-write-journal.ts); past it the bulk write fails with
   * UndoCutShortError. Told once, when it first tries again.
   */
  onUndoRetry?(error: unknown): void;
  readonly undoRetryMs?: number;
  /** Done or undone: how many steps it had, and the longest any of them held the write lock. */
  onFinished?(holds: { readonly longestMs: number; readonly steps: number }): void;
  /** Undone, except these removed products: another product took their barcode meanwhile. */
  onNotRestored?(barcodes: readonly string[]): void;
}

/** How an import or a price list is to be done. */
export interface CheckedBulkOptions extends BulkOptions {
  /**
   * Checks the rows to be written once this bulk write is under way (another one started meanwhile
   * waits for it or stops, as for any bulk write) and before anything is written: false stops it with
   * nothing written.
   */
  check?(): Promise<boolean>;
}

/** How a restore is to be done. */
export interface RestoreOptions extends BulkOptions {
  /** Remove the products the catalogue holds; without it, a catalogue that holds any is refused. */
  readonly replace: boolean;
  /**
   * Checks what is to be restored, once the restore holds the bulk write (creates are refused from
   * then on) and before anything is written: resolves to the highest pk among the products (0: none),
   * or `undefined` to stop the restore with nothing written.
   */
  check(): Promise<number | undefined>;
  /** With `replace`: told how many products each step removed, before the restored ones are written. */
  onRemoved?(products: number): void;
}

/** What a restore did. */
export interface RestoreOutcome {
  readonly restored: number;
  /** Products the catalogue held that were removed (with `replace`). */
  readonly removed: number;
}

/** What applying a price list did, by product. */
export interface PriceListOutcome {
  readonly added: number;
  /** Products whose name or price the list changed. */
  readonly changed: number;
  /** Products already as listed. */
  readonly unchanged: number;
}

