import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { formatPrice } from '../catalogue/price.js';
import { NAMED_PKS } from '../catalogue/named-pks.js';
import { barcodeProblems } from '../catalogue/ean13.js';
import { checkName, PRODUCT_FIELDS, type Product } from '../catalogue/product.js';
import type { CatalogueStore } from '../storage/store.js';
import { PK_COLUMN, type FileFormat } from './product-rows.js';
import { nameForSpreadsheet } from './spreadsheet-names.js';

/** Products read from the database at a time. */
const BATCH_ROWS = 1000;

/** The columns of an export, in their order. */
const COLUMNS = [PK_COLUMN, ...PRODUCT_FIELDS] as const;

/**
 * Writes the whole catalogue, in `pk` order, as the import and the restore read it: CSV with a
 * `pk,name,barcode,price` header, or a JSON array with one product per line (the import ignores the
 * pk; the restore keeps it). Prices are exact decimal
 * strings. In CSV, which is opened in spreadsheets, a name a spreadsheet would run as a formula gets a
 * leading quote (`nameForSpreadsheet`; the import drops it), and a name with a semicolon is quoted,
 * so that a spreadsheet splitting lines at semicolons does not make a cell of what follows one.
 * Streams, so memory does not grow with the catalogue.
 *
 * Every product is written as it is stored, also one that the restore would refuse or change: a name
 * or barcode that plain SQL wrote and the API would not take (a blank name, a name over 200
 * characters or with a tab, spaces around a name, a barcode that is no EAN-13). Those are counted, so
 * that the operator hears of them when the backup is made rather than when it is needed.
 */
export async function exportProducts(store: CatalogueStore, format: FileFormat, output: Writable): Promise<ExportSummary> {
  let count = 0;
  const unrestorable = { count: 0, pks: [] as number[] };
  async function* products(written = (name: string) => name): AsyncGenerator<{ pk: number } & Record<(typeof PRODUCT_FIELDS)[number], string>> {
    let after = 0;
    for (;;) {
      const batch: Product[] = await store.listProductsAfter(after, BATCH_ROWS);
      for (const product of batch) {
        count += 1;
        if (!restoresAsIs(product)) {
          unrestorable.count += 1;
          if (unrestorable.pks.length < NAMED_PKS) unrestorable.pks.push(product.pk);
        }
        yield { pk: product.pk, name: written(product.name), barcode: product.barcode, price: formatPrice(product.priceCents) };
      }
      if (batch.length < BATCH_ROWS) return;
      after = batch[batch.length - 1]!.pk;
    }
  }
  if (format === 'csv') {
    await pipeline(Readable.from(products(nameForSpreadsheet)), stringify({ header: true, columns: [...COLUMNS], quoted_match: ';' }), output);
  } else {
    await pipeline(Readable.from(jsonLines(products())), output);
  }
  return { written: count, unrestorable };
}

/** What an export wrote, and the products in it that a restore would refuse or change (`pks`: the first of them). */
export interface ExportSummary {
  readonly written: number;
  readonly unrestorable: { readonly count: number; readonly pks: readonly number[] };
}

/**
 * Whether the restore's own checks take a product's name and barcode as they are. Its price needs none:
 * the database keeps every price whole, from 0 to the limit (migration 0006, from any writer), and
 * `formatPrice` writes what the restore reads back. The name and barcode alone are checked, as the
 * whole row's check cost 3.2 s of a million products' 9.5 s export (these two: 0.6 s).
 */
function restoresAsIs(product: Product): boolean {
  return checkName(product.name) === product.name && barcodeProblems(product.barcode).length === 0;
}

async function* jsonLines(items: AsyncIterable<object>): AsyncGenerator<string> {
  let first = true;
  yield '[';
  for await (const item of items) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(item)}`;
    first = false;
  }
  yield first ? ']\n' : '\n]\n';
}
