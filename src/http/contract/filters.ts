import Type from 'typebox';
import { MAX_SEARCH_LENGTH, parseProductFilter, type ProductFilter } from '../../catalogue/search.js';
import type { FieldErrors } from '../../catalogue/product.js';
import { HttpProblem } from './problem.js';

/** The listings' filters, as the OpenAPI document shows them. */
export const FILTER_PARAMETERS = {
  barcode: Type.Optional(
    Type.String({
      description:
        'Only the product with this barcode: 13 digits with a valid EAN-13 check digit, or 12 digits with a valid UPC-A check digit (matched as `0` followed by the 12 digits). White space at either end is trimmed. Anything else, empty included, is a 400 naming `barcode`.',
      examples: ['4006381333931', '036000291452'],
    }),
  ),
  search: Type.Optional(
    Type.String({
      description: `Only products whose name contains this text, ignoring case and accents (both sides lower-cased, Unicode NFD, combining marks dropped). White space at either end is trimmed; empty counts as absent; 1 to ${MAX_SEARCH_LENGTH} characters, no control characters, else a 400 naming \`search\`. \`%\` and \`_\` are literal.`,
      examples: ['creme', 'espresso'],
    }),
  ),
};

export const FILTER_QUERY = Type.Object(FILTER_PARAMETERS);

/**
 * The filters of a listing's query.
 * @throws HttpProblem 400 naming every bad filter, with `extra` errors (other parameters') beside them;
 *   `extraMessage` is the problem's detail when only the other parameters are bad.
 */
export function productFilter(params: URLSearchParams, extra: FieldErrors = {}, extraMessage = 'The query parameters are not valid.'): ProductFilter {
  const checked = parseProductFilter(params);
  if (checked.ok && Object.keys(extra).length > 0) throw new HttpProblem(400, extraMessage, { errors: extra });
  if (!checked.ok) throw new HttpProblem(400, 'The query parameters are not valid.', { errors: { ...extra, ...checked.errors } });
  return checked.ok ? checked.filter : {};
}

/** Whether the filter narrows the listing at all. */
export function hasFilter(filter: ProductFilter): boolean {
  return filter.barcode !== undefined || filter.search !== undefined;
}
