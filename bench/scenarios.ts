import { NAME_WORDS, freshBarcode, randomSource, seededProduct } from './data.js';
import { PAGE_NUMBER_SIZE, V2_PATH, limitOffsetBody, matchingNames, pageNumberBody, productBody, selectionOf, wholeCatalogue, wholeListBody } from './expected.js';

export type Pagination = 'limit-offset' | 'page-number';
export type DatabaseKind = 'sqlite' | 'postgres';

/** One request and the answer every target must give to it, byte for byte. */
export interface Exchange {
  readonly method: 'GET' | 'POST';
  /** The request target: path and query. */
  readonly path: string;
  /** POST: the body the check sends. */
  readonly body?: string;
  readonly status: number;
  /** The expected body, before any content coding. */
  readonly answer: string;
  readonly location?: string;
}

/**
 * What one row of the table measures. To add one: list its exchanges (each request with the body
 * the contract promises, built in `expected.ts`), the route pattern bare Fastify declares for them,
 * and, where it differs from the run's, the connection counts to drive it at.
 */
export interface Scenario {
  readonly name: string;
  /** The target for this row, per database, shown beside the numbers. */
  readonly goal: Readonly<Record<DatabaseKind, string>>;
  /** Which service process answers it: they differ only in their pagination style. */
  readonly pagination: Pagination;
  /** The route bare Fastify declares for these requests, as the service declares it. */
  readonly route: string;
  /** Connection counts, one row each; absent: the run's `--connections`. */
  readonly connections?: readonly number[];
  /** Also time one request alone to its first byte, for answers that are streamed. */
  readonly timeFirstByte?: boolean;
  /** Headers on every request of the load and of the check, such as `Accept-Encoding`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The content coding every answer must carry; the baselines serve their bodies so encoded. */
  readonly encoding?: 'gzip' | 'br';
  /**
   * `paths`: the load asks for the exchanges' paths at random (`wrk/paths.lua`).
   * `create`: the load posts products with fresh barcodes to the one exchange's path
   * (`wrk/create.lua`); the check posts that exchange, and the baselines give its answer to every post.
   */
  readonly load: 'paths' | 'create';
  /** Built only when the scenario runs: at a million products some answers are large. */
  readonly exchanges: () => readonly Exchange[];
}

const PAGE = 100;
/** Distinct URLs per scenario: enough to spread over the catalogue, few enough for the baselines to hold. */
const DETAIL_URLS = 10_000;
const PAGE_URLS = 2_000;
/** Each answer of the v1 list is the whole catalogue: 32 clients at once would only measure queueing. */
const V1_LIST_CONNECTIONS = [4];
/** Distinct search terms: each expected answer reads every seeded name once. */
const SEARCH_TERMS = 60;
/** Distinct scanned barcodes among the search scenario's requests. */
const SEARCH_BARCODES = 40;
const SEARCH_PAGE = 20;
/** The latency target is at 4 connections; 32 gives the req/s beside the detail route's. */
const SEARCH_CONNECTIONS = [4, 32];

/** Every scenario of the run, over a catalogue seeded with products 1..size, in the order they run. */
export function buildScenarios(size: number): Scenario[] {
  const catalogue = wholeCatalogue(size);
  const lastOffset = Math.max(0, size - PAGE);
  const lastPage = Math.ceil(size / PAGE_NUMBER_SIZE);
  // Each scenario draws from its own sequence, so that `--only` asks for the same URLs as a full run.
  const picker = (seed: number) => {
    const random = randomSource(seed);
    return (max: number): number => Math.floor(random() * max);
  };
  const offsetPage = (offset: number): Exchange => get(`${V2_PATH}?limit=${PAGE}&offset=${offset}`, limitOffsetBody(catalogue, {}, PAGE, offset));

  const v2 = { pagination: 'limit-offset', route: V2_PATH, load: 'paths' } as const;
  return [
    {
      name: 'detail',
      goal: { sqlite: '≥ 0.85 × Fastify', postgres: '≥ 0.70 × Fastify' },
      pagination: 'limit-offset',
      route: '/api/v1/shop/product/:pk',
      load: 'paths',
      exchanges: () => {
        const pick = picker(1);
        return unique(Math.min(size, DETAIL_URLS), () => 1 + pick(size)).map((pk) => get(`/api/v1/shop/product/${pk}`, productBody(seededProduct(pk))));
      },
    },
    { name: 'v2-first-page', goal: same('p99 reference for v2-end-page'), ...v2, exchanges: () => [offsetPage(0)] },
    {
      name: 'v2-random-page',
      goal: { sqlite: '≥ 0.80 × Fastify', postgres: '≥ 0.60 × Fastify' },
      ...v2,
      exchanges: () => {
        const pick = picker(2);
        return unique(Math.min(PAGE_URLS, lastOffset + 1), () => pick(lastOffset + 1)).map(offsetPage);
      },
    },
    {
      name: 'v2-end-page',
      goal: same('at 1,000,000: p99 ≤ 2 × v2-first-page'),
      ...v2,
      exchanges: () => {
        const pick = picker(3);
        const span = Math.min(PAGE, lastOffset + 1);
        return unique(span, () => lastOffset - pick(span)).map(offsetPage);
      },
    },
    {
      name: 'page-number',
      goal: same('(none)'),
      pagination: 'page-number',
      route: V2_PATH,
      load: 'paths',
      exchanges: () => {
        const pick = picker(4);
        return unique(Math.min(PAGE_URLS, lastPage), () => 1 + pick(lastPage)).map((page) => get(`${V2_PATH}?page=${page}`, pageNumberBody(catalogue, {}, page)));
      },
    },
    {
      name: 'v1-list',
      goal: { sqlite: '≥ 0.80 × node:http; at 1,000,000: ≥ 0.6 × node:http, RSS < 200 MB', postgres: 'at 1,000,000: ≥ 0.6 × node:http, RSS < 200 MB' },
      pagination: 'limit-offset',
      route: '/api/v1/shop/products',
      connections: V1_LIST_CONNECTIONS,
      timeFirstByte: true,
      load: 'paths',
      exchanges: () => [get('/api/v1/shop/products', wholeListBody(catalogue))],
    },
    {
      name: 'barcode',
      goal: same('≥ 0.7 × detail (service)'),
      pagination: 'limit-offset',
      route: '/api/v1/shop/products',
      load: 'paths',
      exchanges: () => {
        const pick = picker(6);
        return unique(Math.min(size, DETAIL_URLS), () => 1 + pick(size)).map((pk) => {
          const product = seededProduct(pk);
          return get(`/api/v1/shop/products?barcode=${product.barcode}`, wholeListBody(selectionOf([product])));
        });
      },
    },
    {
      name: 'search',
      goal: same('at 1,000,000: p50 ≤ 5 ms, p99 ≤ 50 ms at 4 connections'),
      ...v2,
      connections: SEARCH_CONNECTIONS,
      exchanges: () => {
        const pick = picker(7);
        // Parts of the names' words, 3 to 12 characters, typed as a clerk would (any case, accents or not).
        const terms = unique(SEARCH_TERMS, () => {
          const word = NAME_WORDS[pick(NAME_WORDS.length)]!;
          const chars = [...word];
          const length = Math.min(chars.length, 3 + pick(10));
          const start = pick(chars.length - length + 1);
          const part = chars.slice(start, start + length).join('');
          return pick(2) === 0 ? part.toUpperCase() : part.normalize('NFD').replace(/\p{M}/gu, '');
        });
        const matches = matchingNames(size, terms, SEARCH_PAGE);
        const searches = terms.map((term, i) => {
          const query = { limit: String(SEARCH_PAGE), search: term };
          return get(`${V2_PATH}?${new URLSearchParams(query)}`, limitOffsetBody(matches[i]!, query, SEARCH_PAGE, 0));
        });
        const scans = unique(Math.min(size, SEARCH_BARCODES), () => 1 + pick(size)).map((pk) => {
          const product = seededProduct(pk);
          const query = { barcode: product.barcode, limit: String(SEARCH_PAGE) };
          return get(`${V2_PATH}?${new URLSearchParams(query)}`, limitOffsetBody(selectionOf([product]), query, SEARCH_PAGE, 0));
        });
        return [...searches, ...scans];
      },
    },
    // Last: every create changes the count, and so every page's body.
    {
      name: 'create',
      goal: { sqlite: '≥ 10,000/s, synchronous=FULL', postgres: '≥ 5,000/s' },
      pagination: 'limit-offset',
      route: '/api/v1/shop/product/',
      headers: { 'Content-Type': 'application/json' },
      load: 'create',
      exchanges: () => {
        const checked = { name: 'Bench check', barcode: freshBarcode(0), price: '1.01' };
        return [
          {
            method: 'POST',
            path: '/api/v1/shop/product/',
            body: JSON.stringify(checked),
            status: 201,
            answer: JSON.stringify({ pk: size + 1, ...checked }),
            location: `/api/v1/shop/product/${size + 1}`,
          },
        ];
      },
    },
  ];
}

function get(path: string, answer: string): Exchange {
  return { method: 'GET', path, status: 200, answer };
}

function same(goal: string): Record<DatabaseKind, string> {
  return { sqlite: goal, postgres: goal };
}

/** Up to `count` distinct values of `make`, giving up on duplicates after a bounded number of tries. */
function unique<T>(count: number, make: () => T): T[] {
  const seen = new Set<T>();
  for (let tries = 0; seen.size < count && tries < count * 20; tries++) seen.add(make());
  return [...seen];
}
