import type { Pagination } from '../src/config.js';
import { PAGE_NUMBER_SIZE, limitOffsetLinks, pageNumberLinks } from '../src/http/pagination.js';
import { pageItemWire, productWire } from '../src/http/wire.js';
import { freshBarcode, randomSource, seededProduct } from './data.js';

/** Both targets are addressed with this Host, so that page links, and so bodies, are byte-identical. */
export const BENCH_HOST = 'localhost:8000';
const BASE = `http://${BENCH_HOST}`;
const PAGE = 100;
/** Distinct URLs per scenario: enough to spread over the catalogue, few enough for the baseline to hold. */
const DETAIL_URLS = 10_000;
const PAGE_URLS = 2_000;

export interface Scenario {
  readonly name: string;
  /** The target for this row, shown beside the numbers. */
  readonly target: string;
  /** Which service process answers it: they differ only in their pagination style. */
  readonly pagination: Pagination;
  readonly method: 'GET' | 'POST';
  /** GET: the URLs asked, at random. POST: the one path posted to. */
  readonly paths: readonly string[];
  /** The body each path answers, exactly; the baseline serves these and the bench checks the service against them. */
  readonly bodies: ReadonlyMap<string, string>;
  /** Fewer connections than the run's, where each answer is huge (the whole catalogue). */
  readonly maxConnections?: number;
  /** POST only: a fresh request body per call. */
  readonly nextBody?: () => string;
  /** POST only: the baseline's precomputed answer. */
  readonly createdBody?: string;
}

/** Every scenario of the run, over a catalogue seeded with products 1..size. */
export function buildScenarios(size: number): Scenario[] {
  const random = randomSource(20_261_122);
  const pick = (max: number): number => Math.floor(random() * max);
  const lastOffset = Math.max(0, size - PAGE);

  const detailPaths = unique(Math.min(size, DETAIL_URLS), () => `/api/v1/shop/product/${1 + pick(size)}`);
  const detailBodies = new Map(detailPaths.map((path) => [path, JSON.stringify(productWire(seededProduct(Number(path.slice(path.lastIndexOf('/') + 1)))))]));

  const offsetPath = (offset: number): string => `/api/v2/shop/products?limit=${PAGE}&offset=${offset}`;
  const offsetBodies = (paths: string[]): Map<string, string> =>
    new Map(paths.map((path) => [path, limitOffsetBody(size, Number(new URL(path, BASE).searchParams.get('offset')))]));
  const firstPaths = [`/api/v2/shop/products?limit=${PAGE}&offset=0`];
  const randomPaths = unique(Math.min(PAGE_URLS, lastOffset + 1), () => offsetPath(pick(lastOffset + 1)));
  const endPaths = unique(Math.min(PAGE, lastOffset + 1), () => offsetPath(Math.max(0, lastOffset - pick(PAGE))));

  const lastPage = Math.ceil(size / PAGE_NUMBER_SIZE);
  const pagePaths = unique(Math.min(PAGE_URLS, lastPage), () => `/api/v2/shop/products?page=${1 + pick(lastPage)}`);
  const pageBodies = new Map(pagePaths.map((path) => [path, pageNumberBody(size, Number(new URL(path, BASE).searchParams.get('page')))]));

  let created = 0;
  return [
    { name: 'detail', target: '>= 0.85 x baseline req/s', pagination: 'limit-offset', method: 'GET', paths: detailPaths, bodies: detailBodies },
    { name: 'v2-first-page', target: 'p99 reference for v2-end-page', pagination: 'limit-offset', method: 'GET', paths: firstPaths, bodies: offsetBodies(firstPaths) },
    { name: 'v2-random-page', target: '>= 0.7 x baseline req/s', pagination: 'limit-offset', method: 'GET', paths: randomPaths, bodies: offsetBodies(randomPaths) },
    { name: 'v2-end-page', target: 'p99 <= 2 x v2-first-page p99', pagination: 'limit-offset', method: 'GET', paths: endPaths, bodies: offsetBodies(endPaths) },
    { name: 'page-number', target: '(no target)', pagination: 'page-number', method: 'GET', paths: pagePaths, bodies: pageBodies },
    { name: 'v1-list', target: 'streamed; first byte < 100 ms; RSS < 200 MB', pagination: 'limit-offset', method: 'GET', maxConnections: 4, paths: ['/api/v1/shop/products'], bodies: new Map([['/api/v1/shop/products', v1ListBody(size)]]) },
    {
      name: 'create',
      target: '>= 5,000 creates/s at 32 connections',
      pagination: 'limit-offset',
      method: 'POST',
      paths: ['/api/v1/shop/product/'],
      bodies: new Map(),
      nextBody: () => {
        created += 1;
        return JSON.stringify({ name: `Bench product ${created}`, barcode: freshBarcode(created), price: `${created % 1000}.${String(created % 100).padStart(2, '0')}` });
      },
      createdBody: JSON.stringify({ pk: size + 1, name: 'Bench product 1', barcode: freshBarcode(1), price: '1.01' }),
    },
  ];
}

function limitOffsetBody(size: number, offset: number): string {
  const results = [];
  for (let pk = offset + 1; pk <= Math.min(size, offset + PAGE); pk++) results.push(pageItemWire(seededProduct(pk)));
  const params = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
  const links = limitOffsetLinks(BASE, '/api/v2/shop/products', params, { limit: PAGE, offset }, size);
  return JSON.stringify({ count: size, ...links, results });
}

function pageNumberBody(size: number, page: number): string {
  const results = [];
  const first = (page - 1) * PAGE_NUMBER_SIZE + 1;
  for (let pk = first; pk <= Math.min(size, first + PAGE_NUMBER_SIZE - 1); pk++) results.push(pageItemWire(seededProduct(pk)));
  const params = new URLSearchParams({ page: String(page) });
  const links = pageNumberLinks(BASE, '/api/v2/shop/products', params, page, Math.ceil(size / PAGE_NUMBER_SIZE));
  return JSON.stringify({ count: size, ...links, results });
}

function v1ListBody(size: number): string {
  const parts: string[] = [];
  for (let pk = 1; pk <= size; pk++) parts.push(JSON.stringify(productWire(seededProduct(pk))));
  return `[${parts.join(',')}]`;
}

/** Up to `count` distinct values of `make`, giving up on duplicates after a bounded number of tries. */
function unique(count: number, make: () => string): string[] {
  const seen = new Set<string>();
  for (let tries = 0; seen.size < count && tries < count * 20; tries++) seen.add(make());
  return [...seen];
}
