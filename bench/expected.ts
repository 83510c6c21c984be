/**
 * The exact bodies the contract promises, built from its text alone (field order, two-decimal prices,
 * Django REST Framework's page links) and never with the service's serializers, so that the check
 * before each scenario catches a bug in them.
 */
import { productName, seededProduct, type NameSource, type SeededProduct } from './data.js';

/** Every request carries this Host, so that page links, and so bodies, are the same on every target. */
export const BENCH_HOST = 'localhost:8000';
const BASE = `http://${BENCH_HOST}`;
export const V2_PATH = '/api/v2/shop/products';
/** Page-number style's fixed page size. */
export const PAGE_NUMBER_SIZE = 10;

export function priceText(cents: number): string {
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

export function productBody(product: SeededProduct): string {
  return JSON.stringify({ pk: product.pk, name: product.name, barcode: product.barcode, price: priceText(product.priceCents) });
}

/** The products a query selects, in pk order, without holding a million of them in an array. */
export interface Selection {
  readonly count: number;
  /** The product at `index`, from 0. */
  at(index: number): SeededProduct;
}

/** The whole seeded catalogue of `size` products. */
export function wholeCatalogue(size: number): Selection {
  return { count: size, at: (index) => seededProduct(index + 1) };
}

/**
 * A name as the contract compares it for `search`: lower-cased, Unicode NFD, combining marks dropped,
 * NFC. Written here from the contract's words, not taken from the service.
 */
export function contractFold(text: string): string {
  return text.toLowerCase().normalize('NFD').replace(/\p{M}+/gu, '').normalize('NFC');
}

/**
 * For each of `terms`, the products 1..size whose folded name contains the folded term, in pk order:
 * the count of all of them, and the first `keep` (a first page), so that a million names need no array.
 */
export function matchingNames(size: number, terms: readonly string[], keep: number, names: NameSource = productName): Selection[] {
  const folded = terms.map((term) => contractFold(term.trim()));
  const counts = terms.map(() => 0);
  const first: SeededProduct[][] = terms.map(() => []);
  for (let n = 1; n <= size; n++) {
    const product = seededProduct(n, names);
    const name = contractFold(product.name);
    folded.forEach((term, i) => {
      if (!name.includes(term)) return;
      counts[i]! += 1;
      if (first[i]!.length < keep) first[i]!.push(product);
    });
  }
  return first.map((products, i) => ({
    count: counts[i]!,
    at: (index) => {
      if (index >= products.length) throw new Error(`Only the first ${keep} matches are kept.`);
      return products[index]!;
    },
  }));
}

/** A selection of products already picked, e.g. by a filter. */
export function selectionOf(products: readonly SeededProduct[]): Selection {
  return { count: products.length, at: (index) => products[index]! };
}

export function wholeListBody(matching: Selection): string {
  const parts: string[] = [];
  for (let i = 0; i < matching.count; i++) parts.push(productBody(matching.at(i)));
  return `[${parts.join(',')}]`;
}

/**
 * A limit/offset page of `matching`: `next` is null
 * when `offset + limit >= count`, `previous` null at offset 0 and without `offset` when
 * `offset - limit <= 0`; both keep the query's other parameters.
 */
export function limitOffsetBody(matching: Selection, query: Readonly<Record<string, string>>, limit: number, offset: number): string {
  const count = matching.count;
  // `next` while another match follows the page, which with an exact count is the same as DRF's rule.
  const next = offset + limit >= count ? null : v2Link({ ...query, limit: String(limit), offset: String(offset + limit) });
  let previous: string | null = null;
  if (offset > 0) {
    const { offset: _dropped, ...rest } = query;
    previous = v2Link(offset - limit <= 0 ? { ...rest, limit: String(limit) } : { ...query, limit: String(limit), offset: String(offset - limit) });
  }
  return envelope(matching, query, next, previous, offset, offset + limit);
}

/** Page `page` of `matching` in page-number style; `previous` from page 2 omits `page`. */
export function pageNumberBody(matching: Selection, query: Readonly<Record<string, string>>, page: number): string {
  const lastPage = Math.ceil(matching.count / PAGE_NUMBER_SIZE);
  const { page: _dropped, ...rest } = query;
  const next = page < lastPage ? v2Link({ ...query, page: String(page + 1) }) : null;
  const previous = page === 1 ? null : v2Link(page === 2 ? rest : { ...query, page: String(page - 1) });
  const first = (page - 1) * PAGE_NUMBER_SIZE;
  return envelope(matching, query, next, previous, first, first + PAGE_NUMBER_SIZE);
}

/** A search's count stops here: past it a page says `"count": 1000, "count_exact": false`. */
export const SEARCH_COUNT_BOUND = 1_000;

/**
 * The page envelope with the products from index `from` up to, not including, `to`. Filtered by
 * `search` (the query has one), `count` stops at 1,000 and `count_exact` follows it.
 */
function envelope(matching: Selection, query: Readonly<Record<string, string>>, next: string | null, previous: string | null, from: number, to: number): string {
  const results = [];
  for (let i = from; i < Math.min(to, matching.count); i++) {
    const p = matching.at(i);
    results.push({ name: p.name, price: priceText(p.priceCents), barcode: p.barcode });
  }
  const counted = query.search === undefined || query.search.trim() === ''
    ? { count: matching.count }
    : { count: Math.min(matching.count, SEARCH_COUNT_BOUND), count_exact: matching.count <= SEARCH_COUNT_BOUND };
  return JSON.stringify({ ...counted, next, previous, results });
}

/** A v2 address with its parameters sorted by name, as Django REST Framework writes page links. */
export function v2Link(query: Readonly<Record<string, string>>): string {
  const params = new URLSearchParams(Object.entries(query).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const text = params.toString();
  return `${BASE}${V2_PATH}${text === '' ? '' : `?${text}`}`;
}
