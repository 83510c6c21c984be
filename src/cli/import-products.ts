import { checkNewProduct, type FieldErrors, type NewProduct } from '../catalogue/product.js';
import type { BulkOptions, CatalogueStore, PriceListOutcome } from '../storage/store.js';
import { readProductRows, type FileFormat, type RowPosition, type SourceRow } from './product-rows.js';

/** Rows checked against the catalogue, or inserted, at a time. */
const BATCH_ROWS = 1000;

export interface BadRow extends RowPosition {
  readonly reason: string;
}

export interface ImportOptions {
  readonly format: FileFormat;
  /** Import the valid rows even when some are bad; otherwise any bad row stops the whole import. */
  readonly skipInvalid: boolean;
  /**
   * A product whose barcode is already in the catalogue takes the file's name and price (a price
   * list); otherwise such a row is bad.
   */
  readonly update: boolean;
  /** Told of each chunk of bytes read, in the `checking` pass and then the `importing` pass. */
  readonly onProgress?: (phase: 'checking' | 'importing', bytes: number) => void;
  /** Told of the writing's steps: a failure being undone, and how long the write lock was held. */
  readonly bulk?: BulkOptions;
}

export interface ImportResult extends PriceListOutcome {
  /** In file order. */
  readonly bad: readonly BadRow[];
}

/**
 * Imports a file of products with the API's own rules, all or nothing by default.
 *
 * The file is read twice, streaming, so its size is bounded by the disk, not memory (only its
 * barcodes are kept): first every row is checked (product rules, a barcode repeated in the file or,
 * unless updating, already in the catalogue); then, if no row is bad or bad rows may be skipped, the
 * good rows are written in short steps, all or nothing (a failure undoes the steps done).
 *
 * @throws UnreadableFileError when the file is not in the format; DuplicateBarcodeError when another
 *   writer took a barcode between the passes. Nothing is imported then.
 */
export async function importProductFile(store: CatalogueStore, path: string, options: ImportOptions): Promise<ImportResult> {
  const bad = await findBadRows(store, path, options);
  if (bad.length > 0 && !options.skipInvalid) return { added: 0, changed: 0, unchanged: 0, bad };

  // By index, not line: the items of a JSON file may share a line, and each is judged on its own.
  const badRows = new Set(bad.map((row) => row.index));
  async function* batches(): AsyncGenerator<NewProduct[]> {
    let batch: NewProduct[] = [];
    for await (const row of readProductRows(path, options.format, (bytes) => options.onProgress?.('importing', bytes))) {
      if (badRows.has(row.index)) continue;
      const checked = checkRow(row);
      if (!checked.ok) throw new Error(`The row at ${row.at} changed while it was being imported.`);
      batch.push(checked.product);
      if (batch.length >= BATCH_ROWS) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }
  if (options.update) return { ...(await store.applyPriceList(batches(), options.bulk)), bad };
  return { added: await store.insertProducts(batches(), options.bulk), changed: 0, unchanged: 0, bad };
}

async function findBadRows(store: CatalogueStore, path: string, options: ImportOptions): Promise<BadRow[]> {
  const bad: BadRow[] = [];
  const firstOfBarcode = new Map<string, RowPosition>();
  let pending: Array<RowPosition & { barcode: string }> = [];
  const checkPending = async (): Promise<void> => {
    // A price list names products already in the catalogue on purpose.
    const taken = options.update ? new Set<string>() : await store.existingBarcodes(pending.map((row) => row.barcode));
    for (const row of pending) {
      if (taken.has(row.barcode)) bad.push({ index: row.index, at: row.at, reason: `barcode: ${row.barcode} is already in the catalogue.` });
    }
    pending = [];
  };

  for await (const row of readProductRows(path, options.format, (bytes) => options.onProgress?.('checking', bytes))) {
    const checked = checkRow(row);
    if (!checked.ok) {
      bad.push({ index: row.index, at: row.at, reason: checked.reason });
      continue;
    }
    const { barcode } = checked.product;
    const first = firstOfBarcode.get(barcode);
    if (first !== undefined) {
      bad.push({ index: row.index, at: row.at, reason: `barcode: ${barcode} is also on ${first.at}.` });
      continue;
    }
    const position = { index: row.index, at: row.at };
    firstOfBarcode.set(barcode, position);
    pending.push({ ...position, barcode });
    if (pending.length >= BATCH_ROWS) await checkPending();
  }
  await checkPending();
  return bad.sort((a, b) => a.index - b.index);
}

function checkRow(row: SourceRow): { ok: true; product: NewProduct } | { ok: false; reason: string } {
  if ('problem' in row) return { ok: false, reason: row.problem };
  const checked = checkNewProduct(row.fields);
  return checked.ok ? checked : { ok: false, reason: describe(checked.errors) };
}

function describe(errors: FieldErrors): string {
  return Object.entries(errors)
    .map(([field, messages]) => `${field}: ${messages.join(' ')}`)
    .join(' ');
}
