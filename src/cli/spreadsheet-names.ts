/**
 * Names in the CSV files the export writes for spreadsheets, and back.
 *
 * A spreadsheet program opening a CSV file runs a cell that begins with `=`, `+`, `-`, `@`, a tab or a
 * carriage return as a formula (CSV injection; Apple Numbers also the full-width `＝`, `＋`, `－`, `＠`):
 * a product named `=HYPERLINK(...)` would become a link in the shop's price sheet. As OWASP advises,
 * such a name is written with a single quote before it, which spreadsheets take as "text" and do not
 * show. A name that already begins with quotes and then one of those characters gets one more quote
 * too, so that reading can drop one quote from every name that begins so and give every exported name
 * back as it was. Prices and barcodes are digits and need nothing.
 */

const FORMULA_START = '[=+\\-@\\t\\r\\uFF1D\\uFF0B\\uFF0D\\uFF20]';

/** Begins, after any quotes, with a character that makes a spreadsheet cell a formula. */
const FORMULA_AFTER_QUOTES = new RegExp(`^'*${FORMULA_START}`);

/** Begins with at least one quote, then a formula's first character: a name the export protected. */
const PROTECTED = new RegExp(`^'+${FORMULA_START}`);

/** The name as the CSV export writes it: with one quote before it if a spreadsheet would run it. */
export function nameForSpreadsheet(name: string): string {
  return FORMULA_AFTER_QUOTES.test(name) ? `'${name}` : name;
}

/** The name a CSV cell holds: `nameForSpreadsheet` undone. */
export function nameFromSpreadsheet(cell: string): string {
  return PROTECTED.test(cell) ? cell.slice(1) : cell;
}
