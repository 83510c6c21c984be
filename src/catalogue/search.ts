import { ean13CheckDigit } from './ean13.js';
import type { FieldErrors } from './product.js';

/** Longest `search` text accepted, in characters (code points) after trimming. */
export const MAX_SEARCH_LENGTH = 100;

/**
 * Terms with fewer characters than this, once folded, have no trigram: no index can narrow them, so
 * the store answers them by reading the folded names (see docs/PERFORMANCE.md for the cost).
 */
export const TRIGRAM_LENGTH = 3;

/**
 * How far the matches of a `search` are counted: beyond it a page says only that more match. An exact
 * count of a common term reads every match (62,000 rows for a word in one name of sixteen), and nobody
 * looking for a product needs to know more than that there are over a thousand of them.
 */
export const SEARCH_COUNT_BOUND = 1_000;

/** What a listing is narrowed to. Absent fields do not narrow it. */
export interface ProductFilter {
  /** An EAN-13: only the product with exactly this barcode. */
  readonly barcode?: string;
  /** A folded text (`foldForSearch`): only products whose folded name contains it. */
  readonly search?: string;
}

export type FilterCheck = { readonly ok: true; readonly filter: ProductFilter } | { readonly ok: false; readonly errors: FieldErrors };

/**
 * The form in which names are stored for search and terms are compared: lower-cased, decomposed
 * (Unicode NFD), every combining mark dropped, then recomposed (NFC) so that scripts whose letters
 * decompose into letters (Hangul) match letter by letter. Done here only, in JavaScript, for every
 * database alike, so the answers cannot differ with a database's locale or version.
 *
 * @example foldForSearch("Crème BRÛLÉE") // "creme brulee"
 */
export function foldForSearch(text: string): string {
  return text.toLowerCase().normalize('NFD').replace(/\p{M}+/gu, '').normalize('NFC');
}

/**
 * Reads the `barcode` and `search` filters of a listing's query and reports every bad one at once.
 *
 * `barcode`: surrounding white space trimmed, then 13 digits with a valid EAN-13 check digit, or 12
 * digits with a valid UPC-A check digit (read as `0` and those digits). `search`: trimmed, empty counts
 * as absent, 1 to 100 characters, no control characters; returned folded. Either given twice is refused.
 */
export function parseProductFilter(params: URLSearchParams): FilterCheck {
  const errors: FieldErrors = {};
  const filter: { barcode?: string; search?: string } = {};
  const barcode = single(params, 'barcode', errors);
  if (barcode !== undefined) {
    const checked = readScannedBarcode(barcode.trim());
    if (typeof checked === 'string') filter.barcode = checked;
    else errors.barcode = checked;
  }
  const search = single(params, 'search', errors)?.trim();
  if (search !== undefined && search !== '') {
    const problems = searchProblems(search);
    const folded = foldForSearch(search);
    // Text of combining marks alone folds to nothing, and like empty text it narrows nothing.
    if (problems.length > 0) errors.search = problems;
    else if (folded !== '') filter.search = folded;
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, filter };
}

/** Whether `name` matches `filter`'s search (the barcode is not looked at). */
export function nameMatches(name: string, filter: ProductFilter): boolean {
  return filter.search === undefined || foldForSearch(name).includes(filter.search);
}

function single(params: URLSearchParams, name: string, errors: FieldErrors): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) {
    errors[name] = [`Give ${name} once; it was given ${values.length} times.`];
    return undefined;
  }
  return values[0];
}

/**
 * The EAN-13 a scanned barcode stands for (13 digits, or a 12-digit UPC-A read as `0` and its digits),
 * or the reasons it is not one.
 *
 * @example readScannedBarcode("036000291452") // "0036000291452"
 */
export function readScannedBarcode(text: string): string | string[] {
  if (!/^[0-9]+$/.test(text)) {
    return [text === '' ? 'The barcode is empty; give 13 digits (EAN-13) or 12 (UPC-A).' : 'A barcode is 13 digits (EAN-13) or 12 (UPC-A), digits only.'];
  }
  if (text.length !== 12 && text.length !== 13) return [`A barcode is 13 digits (EAN-13) or 12 (UPC-A); got ${text.length} digits.`];
  // A UPC-A is the EAN-13 with a leading 0, and its check digit is the same.
  const ean = text.length === 12 ? `0${text}` : text;
  const expected = ean13CheckDigit(ean);
  const got = ean.charCodeAt(12) - 48;
  if (expected !== got) return [`The ${text.length === 12 ? 'UPC-A' : 'EAN-13'} check digit is wrong: expected ${expected}, got ${got}.`];
  return ean;
}

function searchProblems(text: string): string[] {
  const length = [...text].length;
  if (length > MAX_SEARCH_LENGTH) return [`search is at most ${MAX_SEARCH_LENGTH} characters; got ${length}.`];
  if (/[\u0000-\u001f\u007f-\u009f]/.test(text)) return ['search must not contain control characters.'];
  return [];
}
