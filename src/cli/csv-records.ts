import { Readable } from 'node:stream';
import { CsvError, parse as parseCsv } from 'csv-parse';
import { UnreadableFileError } from './unreadable-file.js';

/**
 * Bytes (UTF-8) a line, a CSV record or a JSON item of a file of products or barcodes may hold: a
 * product's row is well under 1 KiB. A longer one stops the file at once, before it is held: the CSV
 * parser's memory grew much faster than the record (a 50 MB name: 1.66 GB; a 30 MB JSON item: 1.35 GB),
 * and looking for the end of a 50 MB first line took two minutes.
 */
export const MAX_LINE_BYTES = 65_536;

/** The refusal of a line, record or item past MAX_LINE_BYTES, named by where it starts. */
export function tooLong(at: string): UnreadableFileError {
  return new UnreadableFileError(`${at}: a row is longer than 64 KiB (${MAX_LINE_BYTES.toLocaleString('en')} bytes), far more than a product takes`);
}

/** A text of the file shown in a message, cut where it would flood the terminal. */
export function shown(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * The text with every line end made LF: CRLF, and a CR on its own, as an editor shows them. The CSV
 * parser counts a CR and an LF inside a quoted field as two lines, so that every row after a quoted
 * line break of a CRLF file was named a line too late. A field's line break becomes LF too: no product
 * field may hold one, so only the message of a refused one changes.
 */
export async function* lineEndsAsLf(text: AsyncIterable<string>): AsyncGenerator<string> {
  let held = '';
  for await (const chunk of text) {
    const joined = held + chunk;
    // A CR at the end of a chunk may be the first half of a CRLF.
    held = joined.endsWith('\r') ? '\r' : '';
    const whole = held === '' ? joined : joined.slice(0, -1);
    if (whole !== '') yield whole.replace(/\r\n?/g, '\n');
  }
  if (held !== '') yield '\n';
}

/**
 * The first line of a text (without its line end), and the whole text again, the first line included.
 * @throws UnreadableFileError when the first line is longer than MAX_LINE_BYTES (counted in characters, which are never more).
 */
export async function peekFirstLine(text: AsyncIterable<string>): Promise<{ line: string; text: AsyncIterable<string> }> {
  const iterator = text[Symbol.asyncIterator]();
  const read: string[] = [];
  let length = 0;
  let line: string | undefined;
  while (line === undefined) {
    const next = await iterator.next();
    if (next.done === true) {
      line = read.join('');
      break;
    }
    read.push(next.value);
    const end = next.value.indexOf('\n');
    if (end !== -1) line = read.slice(0, -1).join('') + next.value.slice(0, end);
    else if ((length += next.value.length) > MAX_LINE_BYTES) throw tooLong('Line 1');
  }
  async function* again(): AsyncGenerator<string> {
    yield* read;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  return { line, text: again() };
}

/**
 * The chunks of an LF text (`lineEndsAsLf`), as they come, while no line is longer than MAX_LINE_BYTES:
 * a CSV row of 50 MB of separators held 2.53 GB in the parser, whose own bound counts only the fields.
 * @throws UnreadableFileError naming the line that grows past it, before more of it is read.
 */
async function* boundedLines(text: AsyncIterable<string>): AsyncGenerator<string> {
  let lineBytes = 0;
  let line = 1;
  for await (const chunk of text) {
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      if (lineBytes + Buffer.byteLength(chunk.slice(start, end)) > MAX_LINE_BYTES) throw tooLong(`Line ${line}`);
      line += 1;
      lineBytes = 0;
      start = end + 1;
    }
    lineBytes += Buffer.byteLength(chunk.slice(start));
    if (lineBytes > MAX_LINE_BYTES) throw tooLong(`Line ${line}`);
    yield chunk;
  }
}

/**
 * The lines of an LF text (`lineEndsAsLf`), numbered from 1.
 * @throws UnreadableFileError when a line is longer than MAX_LINE_BYTES, before more of it is held.
 */
export async function* textLines(text: AsyncIterable<string>): AsyncGenerator<{ text: string; line: number }> {
  let partial = '';
  let line = 0;
  for await (const chunk of boundedLines(text)) {
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      line += 1;
      yield { text: partial + chunk.slice(start, end), line };
      partial = '';
      start = end + 1;
    }
    partial += chunk.slice(start);
  }
  if (partial !== '') yield { text: partial, line: line + 1 };
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

/** What the CSV parser's refusals mean, in an operator's words; others keep the parser's. */
const PARSER_PROBLEMS: Readonly<Record<string, string>> = {
  CSV_QUOTE_NOT_CLOSED: 'the row that starts here opens a quote that is not closed before the end of the file',
  CSV_INVALID_CLOSING_QUOTE: 'a quoted field of the row that starts here has more after its closing quote (a quote inside a quoted field is written twice: "")',
};

/** A CSV record: its fields as written, and the line of the file it starts on. */
export interface CsvRecord {
  readonly fields: string[];
  readonly line: number;
}

/**
 * The records of a CSV text, the header first, with the separator its header uses: a semicolon when
 * the header has one and no comma (a spreadsheet's CSV where the comma is the decimal mark), else the
 * comma. Fields may hold separators and line breaks inside quotes. Empty lines are skipped, and so
 * is a row whose every field is empty or spaces (`,,`): a spreadsheet writes such rows below its data
 * where cells were once used, and they hold no product.
 *
 * @throws UnreadableFileError, naming the line, when the quoting is broken or a record is too long.
 */
export async function csvRecords(input: AsyncIterable<string>): Promise<{ separator: ',' | ';'; records: AsyncGenerator<CsvRecord> }> {
  const { line, text } = await peekFirstLine(boundedLines(lineEndsAsLf(input)));
  const separator = line.includes(';') && !line.includes(',') ? ';' : ',';
  async function* records(): AsyncGenerator<CsvRecord> {
    const source = Readable.from(text);
    const parser = source.pipe(
      parseCsv({ delimiter: separator, info: true, raw: true, bom: true, skip_empty_lines: true, relax_column_count: true, max_record_size: MAX_LINE_BYTES }),
    );
    // pipe() does not pass the source's errors on; the parser's iteration must end with them.
    source.on('error', (error) => parser.destroy(error));
    try {
      for await (const { record, info, raw } of parser as AsyncIterable<{ record: string[]; info: { lines: number }; raw: string }>) {
        if (record.every((field) => field.trim() === '')) continue;
        yield { fields: record, line: startLine(info.lines, raw) };
      }
    } catch (error) {
      if (!(error instanceof CsvError)) throw error;
      // The parser names the line it had reached; the record it refuses is its raw text so far.
      const at = `Line ${startLine(Number(error['lines']), String(error['raw'] ?? ''))}`;
      if (error.code === 'CSV_MAX_RECORD_SIZE') throw tooLong(at);
      throw new UnreadableFileError(`${at}: ${PARSER_PROBLEMS[error.code] ?? error.message}`);
    }
  }
  return { separator, records: records() };
}
