import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import { JsonNumber } from '../catalogue/json-number.js';
import { parseJsonKeepingNumbers } from '../catalogue/parse-json.js';
import { errorCode } from '../error-details.js';
import { PRODUCT_FIELDS } from '../catalogue/product.js';
import { nameFromSpreadsheet } from './spreadsheet-names.js';
import { csvRecords, lineEndsAsLf, MAX_LINE_BYTES, shown, tooLong } from './csv-records.js';
import { UnreadableFileError } from './unreadable-file.js';

export type FileFormat = 'csv' | 'json';

/** Where a row is in its file: its place among the rows, and how a person finds it there. */
export interface RowPosition {
  /** 1 for the first row (the header and a JSON file's `[` not counted): unique, in file order. */
  readonly index: number;
  /**
   * `line N` for CSV. For JSON `line N, item K` (the line the item starts on, its place in the
   * array), since a JSON file may hold many items on one line and each is judged on its own.
   */
  readonly at: string;
}

/** One product of a file, by its position: its fields, or why it cannot even be read. */
export type SourceRow = RowPosition & ({ readonly fields: Readonly<Record<string, unknown>> } | { readonly problem: string });

/** The format a file name implies: `.json` is JSON, anything else CSV. */
export function formatOfPath(path: string): FileFormat {
  return extname(path).toLowerCase() === '.json' ? 'json' : 'csv';
}

/** The column an export writes beside the product's fields, which a restore reads and an import ignores. */
export const PK_COLUMN = 'pk';

/**
 * Reads products from a file, streaming: CSV with a `name,barcode,price` header (any column order,
 * `pk` allowed too; fields separated by commas, or by semicolons when the header is, as spreadsheets
 * write CSV where the comma is the decimal mark), or a JSON array of `{name, barcode, price}` objects
 * (`pk` allowed too). Values are handed on as written (CSV fields as
 * strings, JSON numbers as `JsonNumber`s) for the catalogue's own checks, but for the quote the CSV
 * export puts before a name that a spreadsheet would run as a formula (`nameFromSpreadsheet`).
 *
 * @param withPks a restore's: a CSV header must name the `pk` column too, as an export's does (a file
 *   of no rows would otherwise restore an empty catalogue from what is no export).
 * @param onBytes told how many bytes each chunk read had, for progress.
 * @throws UnreadableFileError when the file as a whole is not in the format.
 */
export async function* readProductRows(path: string, format: FileFormat, withPks: boolean, onBytes?: (bytes: number) => void): AsyncGenerator<SourceRow> {
  const file = createReadStream(path);
  if (onBytes !== undefined) file.on('data', (chunk) => onBytes(chunk.length));
  try {
    yield* format === 'csv' ? csvRows(file, withPks) : jsonRows(file);
  } catch (error) {
    // The file system's own refusals (a folder, no permission, gone): the file cannot be read at all.
    const code = errorCode(error);
    if (typeof code === 'string' && code.startsWith('E') && error instanceof Error) {
      throw new UnreadableFileError(`Cannot read ${path}: ${error.message}`);
    }
    throw error;
  }
}

/** Line ends in a text: LF, CRLF and a CR alone, each one (`afterCr`: the text before it ended with a CR). */
function lineEnds(text: string, afterCr: boolean): number {
  const ends = text.match(/\r\n|\r|\n/g)?.length ?? 0;
  return afterCr && text.startsWith('\n') ? ends - 1 : ends;
}

/**
 * How many line ends a chunk holds before its first byte that is not UTF-8: the longest start of it that
 * decodes, found by halving (only a file about to be refused pays for it). The chunk may begin with the
 * rest of a character the previous chunk began, which is skipped.
 */
function linesBeforeBadBytes(chunk: Buffer, afterCr: boolean): number {
  let start = 0;
  while (start < Math.min(3, chunk.length) && (chunk[start]! & 0xc0) === 0x80) start += 1;
  const decodes = (end: number): boolean => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(chunk.subarray(start, end), { stream: true });
      return true;
    } catch {
      return false;
    }
  };
  let good = start;
  for (let bad = chunk.length; bad - good > 1; ) {
    const middle = Math.floor((good + bad) / 2);
    if (decodes(middle)) good = middle;
    else bad = middle;
  }
  return lineEnds(new TextDecoder('utf-8').decode(chunk.subarray(start, good)), afterCr);
}

/** The file's text, refusing bytes that are not UTF-8 instead of replacing them, naming their line. */
export async function* strictUtf8(input: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let line = 1;
  let afterCr = false;
  const decode = (bytes?: Buffer): string => {
    try {
      return bytes === undefined ? utf8.decode() : utf8.decode(bytes, { stream: true });
    } catch {
      throw new UnreadableFileError(`Line ${line + (bytes === undefined ? 0 : linesBeforeBadBytes(bytes, afterCr))}: the file is not valid UTF-8.`);
    }
  };
  for await (const chunk of input) {
    const text = decode(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    line += lineEnds(text, afterCr);
    if (text !== '') afterCr = text.endsWith('\r');
    yield text;
  }
  const rest = decode();
  if (rest !== '') yield rest;
}

async function* csvRows(input: AsyncIterable<Buffer | string>, withPks: boolean): AsyncGenerator<SourceRow> {
  const { separator, records } = await csvRecords(strictUtf8(input));
  let header: string[] | undefined;
  let index = 0;
  for await (const { fields, line } of records) {
    if (header === undefined) {
      header = checkHeader(fields, separator, withPks);
      continue;
    }
    index += 1;
    const position = { index, at: `line ${line}` };
    if (fields.length !== header.length) {
      yield { ...position, problem: `Expected ${header.length} fields (${header.join(separator)}), found ${fields.length}.` };
      continue;
    }
    // The quote the export puts before a name a spreadsheet would run is not part of the name.
    yield { ...position, fields: Object.fromEntries(header.map((column, i) => [column, column === 'name' ? nameFromSpreadsheet(fields[i]!) : fields[i]])) };
  }
  if (header === undefined) throw new UnreadableFileError(`The file is empty; the first line must be the header ${headerColumns(withPks).join(',')}.`);
}

/** The columns a header must name: the product's fields, and for a restore the pk first, as an export writes them. */
function headerColumns(withPks: boolean): readonly string[] {
  return withPks ? [PK_COLUMN, ...PRODUCT_FIELDS] : PRODUCT_FIELDS;
}

function checkHeader(record: string[], separator: string, withPks: boolean): string[] {
  const columns = record.map((column) => column.trim().toLowerCase());
  const expected = headerColumns(withPks);
  const unknown = columns.filter((column) => !expected.includes(column) && column !== PK_COLUMN);
  const missing = expected.filter((column) => !columns.includes(column));
  if (unknown.length > 0 || missing.length > 0 || new Set(columns).size !== columns.length) {
    const named = withPks ? `${expected.join(',')} once each (any order), as an export does` : `${expected.join(',')} once each (any order, ${PK_COLUMN} too)`;
    throw new UnreadableFileError(`Line 1: the header must name the columns ${named}, separated by commas or semicolons; found ${shown(record.join(separator))}.`);
  }
  return columns;
}

/**
 * Splits a JSON array into its items while the bytes stream in, remembering the line each item starts
 * on; each item is then parsed on its own, so one broken item is one bad row, not a broken file.
 */
async function* jsonRows(input: AsyncIterable<Buffer | string>): AsyncGenerator<SourceRow> {
  let line = 1;
  let depth = 0;
  let opened = false;
  let closed = false;
  let inString = false;
  let escaped = false;
  let item = '';
  let itemBytes = 0;
  let itemLine = 0;
  let index = 0;
  /** The line of the comma last read at the array's own level while no item has followed it (one must), or 0. */
  let commaLine = 0;

  /** Adds a character to the item, which may not grow past MAX_LINE_BYTES (as a CSV row). */
  const take = (ch: string): void => {
    item += ch;
    const code = ch.charCodeAt(0);
    itemBytes += ch.length === 2 ? 4 : code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
    if (itemBytes > MAX_LINE_BYTES) throw tooLong(`Line ${itemLine}, item ${index + 1}`);
  };

  const finishItem = (): SourceRow | undefined => {
    const text = item.trim();
    item = '';
    itemBytes = 0;
    if (text === '') return undefined;
    index += 1;
    return itemRow(text, { index, at: `line ${itemLine}, item ${index}` });
  };

  // A raw line end inside a JSON string makes its item invalid anyway: as LF, a CR alone is a line too.
  for await (const text of lineEndsAsLf(strictUtf8(input))) {
    const rows: SourceRow[] = [];
    for (const ch of text) {
      if (!opened || closed) {
        if (ch === '\n') line += 1;
        if (/\s/.test(ch)) continue;
        if (!opened && ch === '[') {
          opened = true;
          depth = 1;
          continue;
        }
        throw new UnreadableFileError(`Line ${line}: ${closed ? 'there is more after the closing ]' : 'a JSON file must hold one array of products, starting with ['}.`);
      }
      if (inString) {
        take(ch);
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
        if (ch === '\n') line += 1;
        continue;
      }
      if (depth === 1 && (ch === ',' || ch === ']')) {
        const row = finishItem();
        if (row !== undefined) rows.push(row);
        else if (ch === ',') throw new UnreadableFileError(`Line ${line}: an empty item in the array.`);
        else if (commaLine > 0) throw new UnreadableFileError(`Line ${commaLine}: an empty item in the array (a comma before the closing ]).`);
        commaLine = ch === ',' ? line : 0;
        if (ch === ']') {
          closed = true;
          depth = 0;
        }
        continue;
      }
      if (item === '' && /\s/.test(ch)) {
        if (ch === '\n') line += 1;
        continue;
      }
      if (item === '') itemLine = line;
      take(ch);
      if (ch === '\n') line += 1;
      else if (ch === '"') inString = true;
      else if (ch === '{' || ch === '[') depth += 1;
      else if (ch === '}' || ch === ']') depth -= 1;
    }
    yield* rows;
  }
  if (!opened) throw new UnreadableFileError('The file is empty; a JSON file must hold one array of products.');
  // An item whose own brackets and quotes are all closed is whole: it is the array that is not.
  if (!closed && item.trim() !== '' && (depth > 1 || inString)) {
    throw new UnreadableFileError(`Line ${itemLine}, item ${index + 1}: the file ends inside this item (a string, object or array opened in it is not closed).`);
  }
  if (!closed) throw new UnreadableFileError(`Line ${line}: the file ends before the array is closed with ].`);
}

function itemRow(text: string, position: RowPosition): SourceRow {
  let value: unknown;
  try {
    value = parseJsonKeepingNumbers(text);
  } catch (error) {
    return { ...position, problem: `Not valid JSON${error instanceof SyntaxError ? `: ${error.message}` : ''}.` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof JsonNumber) {
    return { ...position, problem: 'Each item must be an object with name, barcode and price.' };
  }
  return { ...position, fields: value as Record<string, unknown> };
}
