import { JsonNumber } from '../catalogue/json-number.js';
import { truncate } from '../catalogue/truncate.js';
import { checkNewProduct, type FieldErrors, type NewProduct, type Product } from '../catalogue/product.js';
import type { BulkOptions, CatalogueStore, PriceListOutcome, RestoreOutcome } from '../storage/store.js';
import { PK_COLUMN, readProductRows, type FileFormat, type RowPosition, type SourceRow } from './product-rows.js';

/** Rows checked against the catalogue, or inserted, at a time. */
const BATCH_ROWS = 1000;

export interface BadRow extends RowPosition {
  readonly reason: string;
  /** The row is good but for its barcode, which a product in the catalogue has: `--update` would take it. */
  readonly inCatalogue?: true;
}

/** What a file of products is read for: added as new products, applied as a price list, or restored with its pks. */
export type FileUse = 'add' | 'update' | 'restore';

/** How a file of products is read and written, told of its progress in two passes: `checking`, then `Writing`. */
interface FileOptions<Writing extends string> {
  readonly format: FileFormat;
  /** Told of each chunk of bytes read, in the `checking` pass and then the writing one. */
  readonly onProgress?: (phase: 'checking' | Writing, bytes: number) => void;
  /** Told of the writing's steps: a failure being undone, and how long the write lock was held. */
  readonly bulk?: BulkOptions;
}

export interface ImportOptions extends FileOptions<'importing'> {
  /** Import the valid rows even when some are bad; otherwise any bad row stops the whole import. */
  readonly skipInvalid: boolean;
  /**
   * A product whose barcode is already in the catalogue takes the file's name and price (a price
   * list); otherwise such a row is bad.
   */
  readonly update: boolean;
}

export interface ImportResult extends PriceListOutcome {
  /** In file order. */
  readonly bad: readonly BadRow[];
}

export interface RestoreFileOptions extends FileOptions<'restoring'> {
  /** Remove the products the catalogue holds first; without it, only an empty catalogue is restored into. */
  readonly replace: boolean;
  /** With `replace`: told how many products each step removed, before the file's are written. */
  readonly onRemoved?: (products: number) => void;
}

export interface RestoreResult extends RestoreOutcome {
  /** In file order; when there is any, nothing was restored. */
  readonly bad: readonly BadRow[];
}

/**
 * Imports a file of products with the API's own rules, all or nothing by default. A `pk` column or
 * field is ignored: the products get new pks (a restore keeps them).
 *
 * The file is read twice, streaming, so its size is bounded by the disk, not memory (only its
 * barcodes are kept), both passes inside the import's bulk write: first every row is checked (product
 * rules, a barcode repeated in the file or, unless updating, already in the catalogue); then, if no row
 * is bad or bad rows may be skipped, the good rows are written in short steps, all or nothing (a
 * failure undoes the steps done).
 *
 * @throws UnreadableFileError when the file is not in the format; DuplicateBarcodeError when a create
 *   through the service took a barcode between the passes. Nothing is imported then.
 */
export async function importProductFile(store: CatalogueStore, path: string, options: ImportOptions): Promise<ImportResult> {
  const use = options.update ? 'update' : 'add';
  const bad: BadRow[] = [];
  // Checked once the import's bulk write is under way: another bulk write started meanwhile waits for
  // it (or stops), where it could otherwise take a barcode between the check and the write.
  const check = async (): Promise<boolean> => {
    bad.push(...(await findBadRows(store, path, options.format, use, (bytes) => options.onProgress?.('checking', bytes))).bad);
    return bad.length === 0 || options.skipInvalid;
  };
  const batches = goodRows(path, options.format, use, bad, (bytes) => options.onProgress?.('importing', bytes));
  const bulk = { ...options.bulk, check };
  if (options.update) return { ...(await store.applyPriceList(batches, bulk)), bad };
  return { added: await store.insertProducts(batches, bulk), changed: 0, unchanged: 0, bad };
}

/**
 * Restores a file an export wrote, every product with its pk, all or nothing: checked first as an
 * import is (every row must also have a pk, each once), then written in short steps by the store
 * (`CatalogueStore.restoreProducts`), which refuses a catalogue that is not empty unless `replace`.
 *
 * @throws UnreadableFileError, CatalogueNotEmptyError, DuplicateBarcodeError; nothing is restored then.
 */
export async function restoreProductFile(store: CatalogueStore, path: string, options: RestoreFileOptions): Promise<RestoreResult> {
  let bad: BadRow[] = [];
  // Checked once the restore holds the bulk write: creates are refused from then on (a create answered
  // while the file is checked would otherwise be removed by the restore).
  const check = async (): Promise<number | undefined> => {
    const found = await findBadRows(store, path, options.format, 'restore', (bytes) => options.onProgress?.('checking', bytes));
    bad = found.bad;
    return bad.length > 0 ? undefined : found.highestPk;
  };
  const batches = goodRows(path, options.format, 'restore', [], (bytes) => options.onProgress?.('restoring', bytes)) as AsyncIterable<Product[]>;
  const { replace, onRemoved } = options;
  const outcome = await store.restoreProducts(batches, { ...options.bulk, replace, check, ...(onRemoved === undefined ? {} : { onRemoved }) });
  return { ...outcome, bad };
}

/** The file's good rows, read again, in batches: as products, with their pks when restoring. */
async function* goodRows(path: string, format: FileFormat, use: FileUse, bad: readonly BadRow[], onBytes: (bytes: number) => void): AsyncGenerator<NewProduct[]> {
  // By index, not line: the items of a JSON file may share a line, and each is judged on its own.
  const badRows = new Set(bad.map((row) => row.index));
  let batch: NewProduct[] = [];
  for await (const row of readProductRows(path, format, use === 'restore', onBytes)) {
    if (badRows.has(row.index)) continue;
    const checked = checkRow(row, use, format);
    if (!checked.ok) throw new Error(`The row at ${row.at} changed while it was being imported.`);
    batch.push(checked.product);
    if (batch.length >= BATCH_ROWS) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

async function findBadRows(
  store: CatalogueStore,
  path: string,
  format: FileFormat,
  use: FileUse,
  onBytes: (bytes: number) => void,
): Promise<{ bad: BadRow[]; highestPk: number }> {
  const bad: BadRow[] = [];
  const firstOfBarcode = new Map<string, RowPosition>();
  const firstOfPk = new Map<number, RowPosition>();
  let highestPk = 0;
  let pending: Array<RowPosition & { barcode: string }> = [];
  const checkPending = async (): Promise<void> => {
    // A price list names products already in the catalogue on purpose; a restore replaces them or has none.
    const taken = use === 'add' ? await store.existingBarcodes(pending.map((row) => row.barcode)) : new Set<string>();
    for (const row of pending) {
      if (taken.has(row.barcode)) bad.push({ index: row.index, at: row.at, reason: `barcode: ${row.barcode} is already in the catalogue.`, inCatalogue: true });
    }
    pending = [];
  };

  for await (const row of readProductRows(path, format, use === 'restore', onBytes)) {
    const checked = checkRow(row, use, format);
    if (!checked.ok) {
      bad.push({ index: row.index, at: row.at, reason: checked.reason });
      continue;
    }
    const { barcode } = checked.product;
    const position = { index: row.index, at: row.at };
    const first = firstOfBarcode.get(barcode);
    if (first !== undefined) {
      bad.push({ ...position, reason: `barcode: ${barcode} is also on ${first.at}.` });
      continue;
    }
    if ('pk' in checked.product) {
      const { pk } = checked.product;
      const sharing = firstOfPk.get(pk);
      if (sharing !== undefined) {
        bad.push({ ...position, reason: `pk: ${pk} is also on ${sharing.at}.` });
        continue;
      }
      firstOfPk.set(pk, position);
      highestPk = Math.max(highestPk, pk);
    }
    firstOfBarcode.set(barcode, position);
    pending.push({ ...position, barcode });
    if (pending.length >= BATCH_ROWS) await checkPending();
  }
  await checkPending();
  return { bad: bad.sort((a, b) => a.index - b.index), highestPk };
}

/** A row as a product (with its pk when restoring: required then; otherwise a pk is ignored), or why it is bad. */
function checkRow(row: SourceRow, use: FileUse, format: FileFormat): { ok: true; product: NewProduct | Product } | { ok: false; reason: string } {
  if ('problem' in row) return { ok: false, reason: row.problem };
  const { [PK_COLUMN]: pk, ...fields } = row.fields;
  const checked = checkNewProduct(fields);
  const pkProblem = use === 'restore' ? checkPk(pk, Object.hasOwn(row.fields, PK_COLUMN), format) : undefined;
  if (!checked.ok) return { ok: false, reason: describe(pkProblem === undefined ? checked.errors : { [PK_COLUMN]: [pkProblem], ...checked.errors }) };
  if (pkProblem !== undefined) return { ok: false, reason: describe({ [PK_COLUMN]: [pkProblem] }) };
  return { ok: true, product: use === 'restore' ? { pk: Number(pkText(pk)), ...checked.product } : checked.product };
}

/**
 * Why a row's pk cannot be restored, or `undefined` when it can: a whole number from 1 in plain digits,
 * in JSON a number (an export writes one; a string is some other program's).
 */
function checkPk(value: unknown, given: boolean, format: FileFormat): string | undefined {
  if (!given) return 'This field is required: a restore keeps every product\'s pk (an export writes them).';
  if (format === 'json' && typeof value === 'string') return `${JSON.stringify(truncate(value))} is a string; a pk is a JSON number, a whole number from 1 without quotes.`;
  const text = pkText(value);
  if (text === undefined || !/^[1-9][0-9]*$/.test(text)) return `${text === undefined ? 'This' : JSON.stringify(text)} is not a pk; a pk is a whole number from 1, in plain digits.`;
  if (Number(text) > Number.MAX_SAFE_INTEGER) return `${text} is larger than the largest pk, ${Number.MAX_SAFE_INTEGER}.`;
  return undefined;
}

/** A pk as written: a CSV field, a JSON number's text, or a JSON string. */
function pkText(value: unknown): string | undefined {
  if (value instanceof JsonNumber) return value.text;
  return typeof value === 'string' ? value : undefined;
}

function describe(errors: FieldErrors): string {
  return Object.entries(errors)
    .map(([field, messages]) => `${field}: ${messages.join(' ')}`)
    .join(' ');
}
