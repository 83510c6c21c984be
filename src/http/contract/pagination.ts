import type { FieldErrors } from '../../catalogue/product.js';
import { truncate } from '../../catalogue/truncate.js';

/**
 * Digits of the largest safe integer (9007199254740991): a number written with more cannot be read
 * exactly, and need not be read at all to know it is out of every range.
 */
export const SAFE_INTEGER_DIGITS = String(Number.MAX_SAFE_INTEGER).length;

/** Page-number style's fixed page size. */
export const PAGE_NUMBER_SIZE = 10;

export type ParamCheck<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: FieldErrors };

export interface LimitOffset {
  readonly limit: number;
  readonly offset: number;
}

/** `last`, or a page number ≥ 1. */
export type PageRequest = number | 'last';

/**
 * Reads `limit` and `offset`. Absent or empty means the default; anything but plain decimal digits
 * in range is refused. A `limit` above `maxLimit` is lowered to it.
 */
export function parseLimitOffset(params: URLSearchParams, pageSize: number, maxLimit: number): ParamCheck<LimitOffset> {
  const errors: FieldErrors = {};
  // A huge limit is only lowered to the maximum; an offset beyond 2^53 cannot be computed with exactly.
  const limit = wholeNumber(params, 'limit', 1, errors, { huge: 'largest' });
  const offset = wholeNumber(params, 'offset', 0, errors);
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return { ok: true, value: { limit: limit === undefined ? pageSize : Math.min(limit, maxLimit), offset: offset ?? 0 } };
}

/** Reads `page`: absent or empty is 1; `last` is the last page; otherwise a whole number ≥ 1. */
export function parsePage(params: URLSearchParams): ParamCheck<PageRequest> {
  const values = params.getAll('page');
  if (values.length === 1 && values[0] === 'last') return { ok: true, value: 'last' };
  const errors: FieldErrors = {};
  // A huge page is past the last.
  const page = wholeNumber(params, 'page', 1, errors, { alternative: ' or "last"', huge: 'largest' });
  return page === undefined && Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, value: page ?? 1 };
}

/**
 * Reads the whole number parameter `name` (≥ `min`, plain digits) into its value, or `undefined` when
 * absent or empty, recording what is wrong with it in `errors`. Past 2^53 − 1 it is refused, unless
 * `huge` is `'largest'`: then it counts as the largest safe integer (a limit is lowered anyway, a page
 * is past the last anyway).
 */
export function wholeNumber(params: URLSearchParams, name: string, min: number, errors: FieldErrors, { alternative = '', huge = 'refuse' }: { alternative?: string; huge?: 'refuse' | 'largest' } = {}): number | undefined {
  const values = params.getAll(name);
  if (values.length > 1) {
    errors[name] = [`Give ${name} once; it was given ${values.length} times.`];
    return undefined;
  }
  const text = values[0];
  if (text === undefined || text === '') return undefined;
  const expected = `a whole number ≥ ${min} in plain digits${alternative}`;
  if (!/^[0-9]+$/.test(text)) {
    errors[name] = [`${JSON.stringify(truncate(text))} is not ${expected}.`];
    return undefined;
  }
  // Past 2^53 - 1 by its digits, not their count: 16 digits can pass it, and zeros before add none.
  const digits = text.replace(/^0+(?=[0-9])/, '');
  const beyond = digits.length > SAFE_INTEGER_DIGITS || !Number.isSafeInteger(Number(digits));
  const value = beyond && huge === 'largest' ? Number.MAX_SAFE_INTEGER : Number(digits);
  if (value < min) {
    errors[name] = [`${name} must be ${min} or more; got ${text}.`];
    return undefined;
  }
  if (!Number.isSafeInteger(value)) {
    errors[name] = [`${name} must be at most ${Number.MAX_SAFE_INTEGER}.`];
    return undefined;
  }
  return value;
}

/**
 * The absolute URL of a neighbouring page: the request's own address with some parameters set
 * (or, for `undefined`, removed) and every other parameter kept. Parameters are sorted by name,
 * as Django REST Framework writes them, so that each page has one address.
 */
export function pageLink(base: string, path: string, params: URLSearchParams, changes: Readonly<Record<string, number | undefined>>): string {
  const next = new URLSearchParams(params);
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) next.delete(name);
    else next.set(name, String(value));
  }
  next.sort();
  const query = next.toString();
  return `${base}${path}${query === '' ? '' : `?${query}`}`;
}

/**
 * The next and previous links of a limit/offset page, as Django REST Framework computes them; `more`:
 * whether another product follows the page (with an exact count, `offset + limit < count`).
 */
export function limitOffsetLinks(
  base: string,
  path: string,
  params: URLSearchParams,
  { limit, offset }: LimitOffset,
  more: boolean,
): { next: string | null; previous: string | null } {
  const next = more ? pageLink(base, path, params, { limit, offset: offset + limit }) : null;
  let previous: string | null = null;
  if (offset > 0) {
    previous = pageLink(base, path, params, { limit, offset: offset - limit <= 0 ? undefined : offset - limit });
  }
  return { next, previous };
}

/** The next and previous links of page `page`; `more`: whether another product follows it. */
export function pageNumberLinks(
  base: string,
  path: string,
  params: URLSearchParams,
  page: number,
  more: boolean,
): { next: string | null; previous: string | null } {
  const next = more ? pageLink(base, path, params, { page: page + 1 }) : null;
  const previous = page > 1 ? pageLink(base, path, params, { page: page === 2 ? undefined : page - 1 }) : null;
  return { next, previous };
}
