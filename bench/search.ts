/**
 * `npm run bench -- --search`: what finding a product by part of its name costs when the answer is not
 * cached, at a shop's scale (1,000,000 products unless told), and whether short terms hold other requests
 * back. Three loads, each by wrk against the one service:
 * - `detail`: product details alone, 4 connections: the latency the others are compared with;
 * - `search 3+`: searches of 3 to 8 characters, 4 connections, every term met once (parts of seeded
 *   names, as a user types them), so that each answer is computed by the database;
 * - `detail beside search 1-2`: the details again, while 2 more connections search 1 or 2 characters
 *   (which no index narrows) at new offsets.
 * There is no bare-framework baseline here: what is measured is the database's work and how the service
 * schedules it, so the comparison is the detail latency alone against the same beside short searches.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomSource, seededProduct } from './data.js';
import { V2_PATH, contractFold, matchingNames } from './expected.js';
import { serveScratchCatalogue } from './seed.js';
import { errorTotal, runWrk, type LoadResult } from './wrk.js';

export interface SearchOptions {
  readonly dist: string;
  /** `undefined`: an SQLite file; otherwise a PostgreSQL server URL to create a scratch database on. */
  readonly database: string | undefined;
  readonly size: number;
  /** Seconds of each load. */
  readonly duration: number;
  readonly workers: number;
  /** Settings of the environment that would change the service's answers or refuse the load: not passed on. */
  readonly leftOut: readonly string[];
}

const SEARCH_PAGE = 20;
/**
 * Long terms drawn: the seeded names hold fewer distinct parts of 3 to 8 characters (about 50,000), but
 * still far more than 4 connections ask for in a load, so that almost none repeats.
 */
const LONG_TERMS = 100_000;
/** Distinct detail URLs, spread over the catalogue. */
const DETAILS = 10_000;
/** Offsets of the short searches: each term at many offsets, so that their pages are not cached either. */
const SHORT_URLS = 50_000;

/** Seeds a catalogue, runs the three loads and prints a table; returns the exit code (1 on errors). */
export async function runSearch(options: SearchOptions): Promise<number> {
  const { work, kind, port, pid, close } = await serveScratchCatalogue(options.dist, options.database, options.size, {
    ...Object.fromEntries(options.leftOut.map((name) => [name, undefined])),
    WORKERS: String(options.workers),
    PAGINATION: 'limit-offset',
  });
  try {
    const random = randomSource(23);
    const pick = (max: number): number => Math.floor(random() * max);
    const longTerms = distinctTerms(options.size, LONG_TERMS, 3, 8, pick);
    const shortTerms = distinctTerms(options.size, 400, 1, 2, pick);
    const paths = {
      detail: Array.from({ length: DETAILS }, () => `/api/v1/shop/product/${1 + pick(options.size)}`),
      long: longTerms.map((term) => searchPath(term, 0)),
      short: Array.from({ length: SHORT_URLS }, () => searchPath(shortTerms[pick(shortTerms.length)]!, pick(2_000) * SEARCH_PAGE)),
    };
    const files = Object.fromEntries(Object.entries(paths).map(([name, list]) => {
      const file = join(work, `${name}.paths`);
      writeFileSync(file, `${list.join('\n')}\n`);
      return [name, file];
    })) as Record<keyof typeof paths, string>;
    await checkAnswers(port, options.size, [longTerms[0]!, shortTerms[0]!]);

    const load = (file: string, connections: number, seed: number): Promise<LoadResult> =>
      runWrk({ port, pid, threads: 1, connections, seconds: options.duration, headers: {}, script: 'paths', args: [file, String(seed)] });
    // The first reads of a million rows fill the database's page cache; they are not what is measured.
    await load(files.detail, 4, 1);
    const detail = await load(files.detail, 4, 2);
    const long = await load(files.long, 4, 3);
    const [beside, short] = await Promise.all([load(files.detail, 4, 4), load(files.short, 2, 5)]);

    console.log(`Finding products, uncached: ${options.size.toLocaleString('en')} products on ${kind}, WORKERS=${options.workers}, ${options.duration} s per load; Node ${process.version}.\n`);
    console.log('| load | connections | requests | req/s | p50 ms | p99 ms | errors | target |');
    console.log('|---|---|---|---|---|---|---|---|');
    const row = (name: string, connections: number, r: LoadResult, target: string): void =>
      console.log(`| ${name} | ${connections} | ${r.requests.toLocaleString('en')} | ${Math.round(r.requestsPerSecond).toLocaleString('en')} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${errorTotal(r.errors)} | ${target} |`);
    row('detail alone', 4, detail, '');
    row(`search, 3-8 characters, of ${longTerms.length.toLocaleString('en')} terms`, 4, long, 'p99 ≤ 50 ms');
    row('detail, beside the short searches', 4, beside, 'p99 ≤ 20 ms');
    row('search, 1-2 characters, new offsets', 2, short, 'hold nothing back');
    if (long.requests > longTerms.length / 10) console.log(`\n${long.requests.toLocaleString('en')} searches drew from ${longTerms.length.toLocaleString('en')} terms: some were answered from the cache.`);
    const errors = [detail, long, beside, short].reduce((sum, r) => sum + errorTotal(r.errors), 0);
    if (errors > 0) console.error(`\n${errors} requests failed (status 400 or more, or the connection).`);
    return errors > 0 ? 1 : 0;
  } finally {
    await close();
  }
}

function searchPath(term: string, offset: number): string {
  return `${V2_PATH}?limit=${SEARCH_PAGE}&offset=${offset}&search=${encodeURIComponent(term)}`;
}

/**
 * `count` different terms of `shortest` to `longest` characters cut from the folded names of random
 * seeded products, as a user types part of a name; none starts or ends with a space (the service would
 * trim it, and two terms would be one).
 */
function distinctTerms(size: number, count: number, shortest: number, longest: number, pick: (max: number) => number): string[] {
  const terms = new Set<string>();
  for (let tries = 0; terms.size < count && tries < count * 5; tries++) {
    const name = [...contractFold(seededProduct(1 + pick(size)).name)];
    const length = shortest + pick(longest - shortest + 1);
    const start = pick(Math.max(1, name.length - length + 1));
    const term = name.slice(start, start + length).join('');
    if (term.trim() === term && [...term].length === length) terms.add(term);
  }
  return [...terms];
}

/** Fails the run unless the service counts `terms` as the seed says: the load's answers are not checked one by one. */
async function checkAnswers(port: number, size: number, terms: readonly string[]): Promise<void> {
  const expected = matchingNames(size, terms, 0);
  for (const [i, term] of terms.entries()) {
    const response = await fetch(`http://127.0.0.1:${port}${searchPath(term, 0)}`);
    const body = (await response.json()) as { count?: number };
    if (response.status !== 200 || body.count !== expected[i]!.count) {
      throw new Error(`search=${term}: status ${response.status}, count ${body.count}; expected 200 and ${expected[i]!.count}`);
    }
  }
}
