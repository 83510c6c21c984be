import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parse as parseCsvLine } from 'csv-parse/sync';
import { readScannedBarcode } from '../catalogue/search.js';
import { errorCode } from '../error-details.js';
import { UnreadableFileError } from './product-rows.js';

/**
 * One barcode of a list: where it was given (`at`, and `index`, its place among the list's items), and
 * the EAN-13 it stands for or why it is none.
 */
export type ListedBarcode = { readonly index: number; readonly at: string } & ({ readonly barcode: string } | { readonly problem: string });

/**
 * Reads a list of barcodes from a file, streaming: a CSV file whose header names a `barcode` column
 * (other columns, as an export has, are left alone), or plain text with one barcode per line. Which
 * one the first line tells: a header holds a comma or the word `barcode`. Empty lines are skipped;
 * a 12-digit UPC-A stands for its EAN-13, as when a till scans it.
 *
 * @throws UnreadableFileError when the file cannot be read, or a CSV header has no `barcode` column.
 */
export async function* readBarcodeFile(path: string): AsyncGenerator<ListedBarcode> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Number.POSITIVE_INFINITY });
  let column: number | undefined;
  let lineNumber = 0;
  let index = 0;
  try {
    for await (const raw of lines) {
      lineNumber += 1;
      const line = lineNumber === 1 ? raw.replace(/^\uFEFF/, '') : raw;
      if (line.trim() === '') continue;
      if (lineNumber === 1 && (line.includes(',') || line.trim().toLowerCase() === 'barcode')) {
        const header = fields(line, lineNumber).map((name) => name.trim().toLowerCase());
        column = header.indexOf('barcode');
        if (column < 0) throw new UnreadableFileError(`Line 1: a CSV file needs a barcode column; found ${line}.`);
        continue;
      }
      const value = column === undefined ? line : (fields(line, lineNumber)[column] ?? '');
      index += 1;
      yield listed(value, index, `line ${lineNumber}`);
    }
  } catch (error) {
    const code = errorCode(error);
    if (typeof code === 'string' && code.startsWith('E') && error instanceof Error) throw new UnreadableFileError(`Cannot read ${path}: ${error.message}`);
    throw error;
  }
}

/** The barcodes given as arguments, each named by its place. */
export function* barcodeArguments(values: readonly string[]): Generator<ListedBarcode> {
  for (const [i, value] of values.entries()) yield listed(value, i + 1, `argument ${i + 1}`);
}

function listed(value: string, index: number, at: string): ListedBarcode {
  const checked = readScannedBarcode(value.trim());
  return typeof checked === 'string' ? { index, at, barcode: checked } : { index, at, problem: checked.join(' ') };
}

/** A CSV line's fields (a barcode list's lines hold no line breaks inside quotes). */
function fields(line: string, lineNumber: number): string[] {
  try {
    return (parseCsvLine(line, { relax_column_count: true }) as string[][])[0] ?? [];
  } catch (error) {
    throw new UnreadableFileError(`Line ${lineNumber}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
