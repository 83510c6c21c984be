import { createReadStream } from 'node:fs';
import { readScannedBarcode } from '../catalogue/search.js';
import { errorCode } from '../error-details.js';
import { csvRecords, lineEndsAsLf, peekFirstLine, shown, textLines } from './csv-records.js';
import { strictUtf8 } from './product-rows.js';
import { UnreadableFileError } from './unreadable-file.js';

/**
 * One barcode of a list: where it was given (`at`, and `index`, its place among the list's items), and
 * the EAN-13 it stands for or why it is none.
 */
export type ListedBarcode = { readonly index: number; readonly at: string } & ({ readonly barcode: string } | { readonly problem: string });

/**
 * Reads a list of barcodes from a file, streaming: a CSV file whose header names a `barcode` column
 * (other columns, as an export has, are left alone; fields read as an import reads them, quoted line
 * breaks included), or plain text with one barcode per line. Which one the first line tells: a header
 * holds a comma, a semicolon or the word `barcode` (any case, quoted or not). Empty lines are skipped; a
 * 12-digit UPC-A stands for its EAN-13, as when a till scans it.
 *
 * @throws UnreadableFileError when the file cannot be read, is not UTF-8, holds a line far too long, or a
 *   CSV header has no `barcode` column.
 */
export async function* readBarcodeFile(path: string): AsyncGenerator<ListedBarcode> {
  try {
    const { line, text } = await peekFirstLine(lineEndsAsLf(strictUtf8(createReadStream(path))));
    const first = line.replace(/^\uFEFF/, '').trim();
    yield* /[,;]/.test(first) || /^"?\s*barcode\s*"?$/i.test(first) ? csvBarcodes(text) : lineBarcodes(text);
  } catch (error) {
    const code = errorCode(error);
    if (typeof code === 'string' && code.startsWith('E') && error instanceof Error) throw new UnreadableFileError(`Cannot read ${path}: ${error.message}`);
    throw error;
  }
}

/** The barcodes of a CSV file's `barcode` column; a row of another number of fields than the header is a bad one, as for an import. */
async function* csvBarcodes(text: AsyncIterable<string>): AsyncGenerator<ListedBarcode> {
  const { separator, records } = await csvRecords(text);
  let header: string[] | undefined;
  let column = -1;
  let index = 0;
  for await (const { fields, line } of records) {
    if (header === undefined) {
      header = fields.map((name) => name.trim().toLowerCase());
      column = header.indexOf('barcode');
      if (column < 0 || header.lastIndexOf('barcode') !== column) {
        throw new UnreadableFileError(`Line 1: a CSV file needs one barcode column; found ${shown(fields.join(separator))}.`);
      }
      continue;
    }
    index += 1;
    if (fields.length !== header.length) yield { index, at: `line ${line}`, problem: `Expected ${header.length} fields (${shown(header.join(separator))}), found ${fields.length}.` };
    else yield listed(fields[column]!, index, `line ${line}`);
  }
}

/**
 * The barcodes of a plain list, one a line. A barcode in double quotes is read without them: a column
 * of barcodes kept as text is saved so by some spreadsheets, and no barcode holds a quote.
 */
async function* lineBarcodes(text: AsyncIterable<string>): AsyncGenerator<ListedBarcode> {
  let index = 0;
  for await (const { text: raw, line } of textLines(text)) {
    const value = (line === 1 ? raw.replace(/^\uFEFF/, '') : raw).trim();
    if (value === '') continue;
    index += 1;
    yield listed(/^"[^"]*"$/.test(value) ? value.slice(1, -1) : value, index, `line ${line}`);
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
