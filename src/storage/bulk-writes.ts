import { sql, type Transaction } from 'kysely';
import { CatalogueNotEmptyError, DuplicateBarcodeError, UndoCutShortError, UnknownBarcodesError } from '../catalogue/errors.js';
import type { NewProduct, Product } from '../catalogue/product.js';
import { BulkWriteJournal, type BulkWriteKind } from './bulk-write-journal.js';
import { stateOf, STATE_ROW, writeNewCatalogueId } from './catalogue-state.js';
import type { StateRow } from './dialect.js';
import { NEW_PRODUCT_COLUMNS, newProductRow, type NewProductRow } from './product-row.js';
import type { Database } from './schema.js';
import type { StoreContext } from './store-context.js';
import type { BulkOptions, CheckedBulkOptions, PriceListOutcome, RestoreOptions, RestoreOutcome } from './store.js';

/** Rows per statement when many are read at once; well under every database's parameter limit. */
const ROWS_PER_STATEMENT = 500;

/**
 * Rows written per step of a bulk write: one transaction, holding the write lock for some tens of
 * milliseconds (docs/PERFORMANCE.md has the measured figures).
 */
const ROWS_PER_STEP = 1_000;

/**
 * Writes of many products at once: imports, price lists and removals. Each runs in short steps
 * journaled for undo (bulk-write-journal.ts): all or nothing, without holding the write lock for long.
 */
export class BulkWrites {
  readonly #context: StoreContext;

  constructor(context: StoreContext) {
    this.#context = context;
  }

  async existingBarcodes(barcodes: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < barcodes.length; start += ROWS_PER_STATEMENT) {
      const chunk = barcodes.slice(start, start + ROWS_PER_STATEMENT);
      const rows = await this.#context.run(() => this.#context.db.selectFrom('product').select('barcode').where('barcode', 'in', chunk).execute());
      for (const row of rows) found.add(row.barcode);
    }
    return found;
  }

  insertProducts(batches: AsyncIterable<readonly NewProduct[]>, options: CheckedBulkOptions = {}): Promise<number> {
    return this.#inSteps('import', batches, options, 0, async (journal, trx, chunk) => {
      const rows = await trx.insertInto('product').values(chunk.map(newProductRow)).returning('pk').execute();
      await journal.recordAdded(trx, rows.map((row) => row.pk));
      return rows.length;
    }, (stored, added) => stored + added, checkFirst(options));
  }

  applyPriceList(batches: AsyncIterable<readonly NewProduct[]>, options: CheckedBulkOptions = {}): Promise<PriceListOutcome> {
    let listed = 0;
    return this.#inSteps('price list', batches, options, { added: 0, changed: 0, unchanged: 0 }, async (journal, trx, chunk) => {
      const withList = sql`WITH price_list (ord, barcode, name, name_folded, price_cents) AS (${priceListRows(chunk, listed)})`;
      listed += chunk.length;
      // The IN makes SQLite look the listed barcodes up in the product's index: left to itself, with
      // parameters it scans every product once per step, and a price list grows quadratic.
      const changes = sql<boolean>`product.barcode = price_list.barcode AND product.barcode IN (SELECT barcode FROM price_list)
        AND (product.name <> price_list.name OR product.price_cents <> price_list.price_cents)`;
      // The products it changes, as they were, then the change.
      await journal.recordRows(trx, 'changed', { with: withList, from: sql`product JOIN price_list ON ${changes}` });
      const updated = await sql`
        ${withList}
        UPDATE product SET name = price_list.name, name_folded = price_list.name_folded, price_cents = price_list.price_cents
        FROM price_list WHERE ${changes}`.execute(trx);
      // The listed products not in the catalogue, added in list order: they draw their pks in that order.
      const { rows: added } = await sql<{ pk: number | string }>`
        ${withList}
        INSERT INTO product (${sql.raw(NEW_PRODUCT_COLUMNS.join(', '))})
        SELECT price_list.name, price_list.name_folded, price_list.barcode, price_list.price_cents FROM price_list
        WHERE NOT EXISTS (SELECT 1 FROM product WHERE product.barcode = price_list.barcode)
        ORDER BY price_list.ord
        RETURNING pk`.execute(trx);
      await journal.recordAdded(trx, added.map((row) => row.pk));
      const changed = Number(updated.numAffectedRows ?? 0);
      return { added: added.length, changed, unchanged: chunk.length - added.length - changed };
    }, (total, step) => ({ added: total.added + step.added, changed: total.changed + step.changed, unchanged: total.unchanged + step.unchanged }), checkFirst(options));
  }

  /**
   * Removes the products with these barcodes, all or none.
   * @throws UnknownBarcodesError naming the barcodes no product has (nothing is removed then).
   */
  removeProducts(batches: AsyncIterable<readonly string[]>, options: BulkOptions = {}): Promise<number> {
    return this.#inSteps('removal', batches, options, 0, async (journal, trx, chunk) => {
      // Checked before the removal began; another writer may have removed some meanwhile.
      const found = new Set((await trx.selectFrom('product').select('barcode').where('barcode', 'in', chunk).execute()).map((row) => row.barcode));
      const unknown = [...new Set(chunk)].filter((barcode) => !found.has(barcode));
      if (unknown.length > 0) throw new UnknownBarcodesError(unknown);
      await journal.recordRows(trx, 'removed', { from: sql`product`, where: sql<boolean>`product.barcode IN (${sql.join(chunk)})` });
      const { numDeletedRows } = await trx.deleteFrom('product').where('barcode', 'in', chunk).executeTakeFirstOrThrow();
      return Number(numDeletedRows);
    }, (removed, step) => removed + step);
  }

  /**
   * Restores products with their own pks, all or nothing (see `CatalogueStore.restoreProducts`): the
   * products there at the start are removed first when `replace` says so, in the same bulk write.
   */
  async restoreProducts(batches: AsyncIterable<readonly Product[]>, { replace, check, onRemoved, ...options }: RestoreOptions): Promise<RestoreOutcome> {
    const context = this.#context;
    let lastPk = 0;
    // Creates are refused while the restore's bulk write is under way (RESTORE_UNDER_WAY): the
    // products there when it checked its file are those there when it writes.
    const begin = async (journal: BulkWriteJournal): Promise<boolean> => {
      const highestPk = await untilAborted(check(), options.signal);
      if (highestPk === undefined) return false;
      await journal.step(async (trx) => {
        const { count } = stateOf((await sql<StateRow>`${sql.raw(STATE_ROW)}`.execute(trx)).rows[0]);
        if (count > 0 && !replace) throw new CatalogueNotEmptyError(count);
        if (highestPk > 0) await context.dialect.reservePks(trx, highestPk);
        await writeNewCatalogueId(trx);
        const highest = await trx.selectFrom('product').select((eb) => eb.fn.max('pk').as('pk')).executeTakeFirst();
        lastPk = Number(highest?.pk ?? 0);
      });
      return true;
    };
    // The products there now, a batch of pks at a time; those created from now on stay.
    async function* present(): AsyncGenerator<RestoreItem[]> {
      let after = 0;
      for (;;) {
        const rows = await context.run(() =>
          context.db.selectFrom('product').select('pk').where('pk', '>', after).where('pk', '<=', lastPk).orderBy('pk').limit(ROWS_PER_STEP).execute(),
        );
        if (rows.length === 0) return;
        yield rows.map((row) => ({ remove: Number(row.pk) }));
        after = Number(rows.at(-1)!.pk);
      }
    }
    async function* items(): AsyncGenerator<readonly RestoreItem[]> {
      if (replace) yield* present();
      for await (const batch of batches) yield batch.map((product) => ({ restore: product }));
    }
    return this.#inSteps('restore', items(), options, { restored: 0, removed: 0 }, async (journal, trx, chunk) => {
      const removed = chunk.flatMap((item) => ('remove' in item ? [item.remove] : []));
      const restored = chunk.flatMap((item) => ('restore' in item ? [item.restore] : []));
      if (removed.length > 0) {
        await journal.recordRows(trx, 'removed', { from: sql`product`, where: sql<boolean>`product.pk IN (${sql.join(removed)})` });
        await trx.deleteFrom('product').where('pk', 'in', removed).execute();
        onRemoved?.(removed.length);
      }
      if (restored.length > 0) {
        const rows = restored.map((product) => {
          const row = newProductRow(product);
          return sql`(${product.pk}, ${row.name}, ${row.name_folded}, ${row.barcode}, ${row.price_cents})`;
        });
        await sql`INSERT INTO product (pk, ${sql.raw(NEW_PRODUCT_COLUMNS.join(', '))}) ${context.dialect.givenPk} VALUES ${sql.join(rows)}`.execute(trx);
        await journal.recordAdded(trx, restored.map((product) => product.pk));
      }
      return { restored: restored.length, removed: removed.length };
    }, (total, step) => ({ restored: total.restored + step.restored, removed: total.removed + step.removed }), begin);
  }

  /**
   * Runs a bulk write over `batches` in steps of up to ROWS_PER_STEP items, each `step` in a transaction
   * of its own, its outcomes added up with `add`, after `begin` (which may run steps of its own, and
   * stops the bulk write with nothing more written when it gives false). On any failure, the steps done
   * are undone.
   */
  async #inSteps<Item, Outcome, Total>(
    kind: BulkWriteKind,
    batches: AsyncIterable<readonly Item[]>,
    options: BulkOptions,
    empty: Total,
    step: (journal: BulkWriteJournal, trx: Transaction<Database>, chunk: readonly Item[]) => Promise<Outcome>,
    add: (total: Total, outcome: Outcome) => Total,
    begin?: (journal: BulkWriteJournal) => Promise<boolean>,
  ): Promise<Total> {
    const journal = await BulkWriteJournal.start(this.#context, kind, options.wait, options.onAbandonedUndone);
    let chunk: readonly Item[] = [];
    try {
      if (begin !== undefined && !(await journal.whileAlive(begin(journal)))) {
        await journal.finish();
        options.onFinished?.(journal.holds);
        return empty;
      }
      let total = empty;
      for await (const batch of stoppable(batches, options.signal)) {
        for (let start = 0; start < batch.length; start += ROWS_PER_STEP) {
          options.signal?.throwIfAborted();
          chunk = batch.slice(start, start + ROWS_PER_STEP);
          const current = chunk;
          total = add(total, await journal.step((trx) => step(journal, trx, current)));
        }
      }
      await journal.finish();
      options.onFinished?.(journal.holds);
      return total;
    } catch (error) {
      options.onUndo?.({ steps: journal.holds.steps });
      let notRestored: readonly string[];
      try {
        ({ notRestored } = await journal.undo(options.undoRetryMs, options.onUndoRetry));
      } catch (undoError) {
        options.onFinished?.(journal.holds);
        throw new UndoCutShortError(this.#context.translate(error, 'a step of a bulk write'), undoError);
      }
      options.onFinished?.(journal.holds);
      if (notRestored.length > 0) options.onNotRestored?.(notRestored);
      throw await this.#refusal(error, chunk);
    }
  }

  /** The store's error for a bulk write's failure while it wrote `chunk`. */
  async #refusal(error: unknown, chunk: readonly unknown[]): Promise<unknown> {
    if (!this.#context.isUniqueViolation(error)) return this.#context.translate(error, 'a step of a bulk write');
    // Which barcode was taken: one already stored, or else one repeated in the chunk.
    const barcodes = chunk.flatMap(barcodeOf);
    const [stored] = await this.existingBarcodes(barcodes);
    return new DuplicateBarcodeError(stored ?? barcodes.find((b, i) => barcodes.indexOf(b) !== i) ?? barcodes[0] ?? '');
  }
}

/**
 * The `begin` of an import or a price list that checks its rows first: the check runs once the bulk
 * write is under way, so that no other bulk write starts between the check and the write.
 */
function checkFirst({ check, signal }: CheckedBulkOptions): ((journal: BulkWriteJournal) => Promise<boolean>) | undefined {
  return check === undefined ? undefined : () => untilAborted(check(), signal);
}

/** `promise`, or the signal's reason once it is aborted, whichever comes first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(signal.reason);
    if (signal.aborted) abort();
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/**
 * The batches of `source` until `signal` is aborted: a read of the next batch that is still waiting
 * (a file on a slow disk, a pipe) fails with the signal's reason at once.
 */
async function* stoppable<T>(source: AsyncIterable<T>, signal: AbortSignal | undefined): AsyncGenerator<T> {
  if (signal === undefined) return yield* source;
  const iterator = source[Symbol.asyncIterator]();
  let done = false;
  try {
    for (;;) {
      const next = await untilAborted(iterator.next(), signal);
      if (next.done === true) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // Not awaited: a read still waiting ends it only once it returns.
    if (!done) void iterator.return?.()?.catch(() => undefined);
  }
}

/** A step's item of a restore: a product there before to remove, or one to restore. */
type RestoreItem = { readonly remove: number } | { readonly restore: Product };

/** The barcode an item of a bulk write writes, if any: a barcode to remove, a product, a product to restore. */
function barcodeOf(item: unknown): string[] {
  if (typeof item === 'string') return [item];
  if (typeof item !== 'object' || item === null) return [];
  if ('restore' in item) return barcodeOf((item as { restore: Product }).restore);
  return 'barcode' in item ? [(item as NewProduct).barcode] : [];
}

/**
 * A chunk of a price list as a table `(ord, barcode, name, name_folded, price_cents)`, typed alike on
 * every database; `ord` is the row's place in the whole list, counted from `firstOrd`.
 */
function priceListRows(products: readonly NewProduct[], firstOrd: number) {
  const rows = products.map((product, i) => {
    const row = newProductRow(product);
    return sql`(cast(${firstOrd + i} as bigint), cast(${row.barcode} as text), cast(${row.name} as text), cast(${row.name_folded} as text), cast(${row.price_cents} as bigint))`;
  });
  return sql<{ ord: number } & NewProductRow>`VALUES ${sql.join(rows)}`;
}

