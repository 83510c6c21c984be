import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import { Readable } from 'node:stream';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { JsonNumber } from '../catalogue/json-number.js';
import { parseJsonKeepingNumbers } from '../catalogue/parse-json.js';
import { errorCode } from '../error-details.js';
import { PRODUCT_FIELDS } from '../catalogue/product.js';
import { nameFromSpreadsheet } from './spreadsheet-names.js';

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

/** The file as a whole cannot be read (wrong header, broken quoting, not a JSON array, not UTF-8). */
export class UnreadableFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreadableFileError';
  }
}

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
 * @param onBytes told how many bytes each chunk read had, for progress.
 * @throws UnreadableFileError when the file as a whole is not in the format.
 */
export async function* readProductRows(path: string, format: FileFormat, onBytes?: (bytes: number) => void): AsyncGenerator<SourceRow> {
  const file = createReadStream(path);
  if (onBytes !== undefined) file.on('data', (chunk) => onBytes(chunk.length));
  try {
    yield* format === 'csv' ? csvRows(file) : jsonRows(file);
  } catch (error) {
    // The file system's own refusals (a folder, no permission, gone): the file cannot be read at all.
    const code = errorCode(error);
    if (typeof code === 'string' && code.startsWith('E') && error instanceof Error) {
      throw new UnreadableFileError(`Cannot read ${path}: ${error.message}`);
    }
    throw error;
  }
}

/**
 * How many line ends a chunk holds before the line whose bytes are not UTF-8. A line end (0x0A) is
 * never part of a longer character, so the chunk's lines are checked one by one; the first may begin
 * with the rest of a character the previous chunk began, which is skipped.
 */
function linesBeforeBadBytes(chunk: Buffer): number {
  let start = 0;
  while (start < Math.min(3, chunk.length) && (chunk[start]! & 0xc0) === 0x80) start += 1;
  for (let lines = 0; ; lines += 1) {
    const end = chunk.indexOf(0x0a, start);
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(chunk.subarray(start, end === -1 ? chunk.length : end), { stream: end === -1 });
    } catch {
      return lines;
    }
    if (end === -1) return lines;
    start = end + 1;
  }
}

/** The file's text, refusing bytes that are not UTF-8 instead of replacing them. */
export async function* strictUtf8(input: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let line = 1;
  const decode = (bytes?: Buffer): string => {
    try {
      return bytes === undefined ? utf8.decode() : utf8.decode(bytes, { stream: true });
    } catch {
      throw new UnreadableFileError(`Line ${line + (bytes === undefined ? 0 : linesBeforeBadBytes(bytes))}: the file is not valid UTF-8.`);
    }
  };
  for await (const chunk of input) {
    const text = decode(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    for (const ch of text) if (ch === '\n') line += 1;
    yield text;
  }
  const rest = decode();
  if (rest !== '') yield rest;
}

/**
 * The line a CSV record starts on: the parser counts the line it ends on, which is later for a quoted
 * field that holds line breaks (its raw text holds them, and its own line ending if it has one). The raw
 * text begins with the empty lines skipped before the record, which are not its own.
 */
function startLine(endLine: number, raw: string): number {
  const breaks = raw.replace(/^\n+/, '').split('\n').length - 1;
  return endLine - (raw.endsWith('\n') ? breaks - 1 : breaks);
}

/** The first line of a text (without its line end), and the whole text again, the first line included. */
export async function peekFirstLine(text: AsyncIterable<string>): Promise<{ line: string; text: AsyncIterable<string> }> {
  const iterator = text[Symbol.asyncIterator]();
  const read: string[] = [];
  let start = '';
  while (!start.includes('\n')) {
    const next = await iterator.next();
    if (next.done === true) break;
    read.push(next.value);
    start += next.value;
  }
  async function* again(): AsyncGenerator<string> {
    yield* read;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  return { line: start.split('\n', 1)[0]!.replace(/\r$/, ''), text: again() };
}

/**
 * The text with each CRLF line end made LF. The CSV parser counts a CR and an LF inside a quoted field
 * as two lines, so that in a CRLF file every row after a quoted line break was named a line too late.
 * A field's CRLF becomes LF too: no product field may hold a line break, so only the message of a
 * refused one changes.
 */
async function* crlfAsLf(text: AsyncIterable<string>): AsyncGenerator<string> {
  let held = '';
  for await (const chunk of text) {
    const joined = held + chunk;
    held = joined.endsWith('\r') ? '\r' : '';
    const whole = held === '' ? joined : joined.slice(0, -1);
    if (whole !== '') yield whole.replaceAll('\r\n', '\n');
  }
  if (held !== '') yield held;
}

/**
 * Characters a CSV record may hold: a product's row is well under a thousand, and the parser's memory
 * grew much faster than the record (a 50 MB name: 1.66 GB), so a longer one stops the file at once.
 */
const MAX_RECORD_CHARACTERS = 65_536;

/** A CSV record: its fields as written, and the line of the file it starts on. */
export interface CsvRecord {
  readonly fields: string[];
  readonly line: number;
}

/**
 * The records of a CSV text, the header first, with the separator its header uses: a semicolon when
 * the header has one and no comma (a spreadsheet's CSV where the comma is the decimal mark), else the
 * comma. Fields may hold separators and line breaks inside quotes; empty lines are skipped.
 *
 * @throws UnreadableFileError, naming the line, when the quoting is broken or a record is too long.
 */
export async function csvRecords(input: AsyncIterable<string>): Promise<{ separator: ',' | ';'; records: AsyncGenerator<CsvRecord> }> {
  const { line, text } = await peekFirstLine(crlfAsLf(input));
  const separator = line.includes(';') && !line.includes(',') ? ';' : ',';
  async function* records(): AsyncGenerator<CsvRecord> {
    const source = Readable.from(text);
    const parser = source.pipe(
      parseCsv({ delimiter: separator, info: true, raw: true, bom: true, skip_empty_lines: true, relax_column_count: true, max_record_size: MAX_RECORD_CHARACTERS }),
    );
    // pipe() does not pass the source's errors on; the parser's iteration must end with them.
    source.on('error', (error) => parser.destroy(error));
    try {
      for await (const { record, info, raw } of parser as AsyncIterable<{ record: string[]; info: { lines: number }; raw: string }>) {
        yield { fields: record, line: startLine(info.lines, raw) };
      }
    } catch (error) {
      if (!(error instanceof CsvError)) throw error;
      const message = error.code === 'CSV_MAX_RECORD_SIZE' ? `a row is longer than ${MAX_RECORD_CHARACTERS.toLocaleString('en')} characters, far more than a product takes` : error.message;
      throw new UnreadableFileError(`Line ${String(error['lines'])}: ${message}`);
    }
  }
  return { separator, records: records() };
}

async function* csvRows(input: AsyncIterable<Buffer | string>): AsyncGenerator<SourceRow> {
  const { separator, records } = await csvRecords(strictUtf8(input));
  let header: string[] | undefined;
  let index = 0;
  for await (const { fields, line } of records) {
    if (header === undefined) {
      header = checkHeader(fields, separator);
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
  if (header === undefined) throw new UnreadableFileError(`The file is empty; the first line must be the header ${PRODUCT_FIELDS.join(',')}.`);
}

function checkHeader(record: string[], separator: string): string[] {
  const columns = record.map((column) => column.trim().toLowerCase());
  const expected = PRODUCT_FIELDS as readonly string[];
  const unknown = columns.filter((column) => !expected.includes(column) && column !== PK_COLUMN);
  const missing = expected.filter((column) => !columns.includes(column));
  if (unknown.length > 0 || missing.length > 0 || new Set(columns).size !== columns.length) {
    throw new UnreadableFileError(
      `Line 1: the header must name the columns ${expected.join(',')} once each (any order, ${PK_COLUMN} too), separated by commas or semicolons; found ${record.join(separator)}.`,
    );
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
  let itemLine = 0;
  let index = 0;

  const finishItem = (): SourceRow | undefined => {
    const text = item.trim();
    item = '';
    if (text === '') return undefined;
    index += 1;
    return itemRow(text, { index, at: `line ${itemLine}, item ${index}` });
  };

  for await (const text of strictUtf8(input)) {
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
        item += ch;
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
      item += ch;
      if (ch === '\n') line += 1;
      else if (ch === '"') inString = true;
      else if (ch === '{' || ch === '[') depth += 1;
      else if (ch === '}' || ch === ']') depth -= 1;
    }
    yield* rows;
  }
  if (!opened) throw new UnreadableFileError('The file is empty; a JSON file must hold one array of products.');
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
