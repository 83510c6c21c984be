/**
 * `npm run bench -- --search`: what finding a product by part of its name costs when the answer is not
 * cached, at a shop's scale (1,000,000 products unless told), and whether short terms hold other requests
 * back. Five loads, each by wrk against the one service:
 * - `detail`: product details alone, 4 connections: the latency the others are compared with;
 * - `search 3+`: searches of 3 to 8 characters, 4 connections, every term met once (parts of seeded
 *   names, as a user types them), so that each answer is computed by the database;
 * - `rare`: terms in a handful of names or none (a model code, or a part of a name with a letter no
 *   name has), each met once;
 * - `common`: terms in more than 1,000 names, at pages and page sizes met once;
 * - `detail beside search 1-2`: the details again, while 2 more connections search 1 or 2 characters
 *   (which no index narrows) at new offsets.
 * `--names shop` seeds names the service was not designed around (bench/shop-names.ts) instead of the
 * bench's own. There is no bare-framework baseline here: what is measured is the database's work and
 * how the service schedules it, so the comparison is the detail latency alone against the same beside
 * short searches, and rare terms against common ones.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NAME_WORDS, productName, randomSource, type NameSource } from './data.js';
import { SEARCH_COUNT_BOUND, V2_PATH, contractFold, matchingNames } from './expected.js';
import { SHOP_COMMON_WORDS, shopName } from './shop-names.js';
import { serveScratchCatalogue } from './seed.js';
import { errorTotal, runWrk, type LoadResult } from './wrk.js';

export interface SearchOptions {
  readonly dist: string;
  /** `undefined`: an SQLite file; otherwise a PostgreSQL server URL to create a scratch database on. */
  readonly database: string | undefined;
  readonly size: number;
  /** Seconds of each load. */
  readonly duration: number;
  /** Times each load is run, each over requests of its own; the table shows each load's best (lowest p99). */
  readonly rounds: number;
  readonly workers: number;
  /** Settings of the environment that would change the service's answers or refuse the load: not passed on. */
  readonly leftOut: readonly string[];
  /** Whose names to seed: the bench's own, or a shop's it was not designed around. */
  readonly names: SearchNames;
}

export type SearchNames = 'bench' | 'shop';

/** Each kind of names: how product `n` is named, and words that many names hold. */
const NAMES: Record<SearchNames, { readonly nameOf: NameSource; readonly commonWords: readonly string[] }> = {
  bench: { nameOf: productName, commonWords: NAME_WORDS },
  shop: { nameOf: shopName, commonWords: SHOP_COMMON_WORDS },
};

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
/** Rare terms drawn: each asked once, as the long terms are. */
const RARE_TERMS = 30_000;
/** Pages of common terms: few terms, each at many pages and page sizes, so that no answer repeats. */
const COMMON_URLS = 50_000;
/**
 * A letter in none of the bench's names and in one brand of a shop's (`Jerry's`): put into a part of a
 * name in place of another letter, it makes a term that finds nothing, as a typing error does.
 */
const ABSENT_LETTER = 'y';

/** Seeds a catalogue, runs the three loads and prints a table; returns the exit code (1 on errors). */
export async function runSearch(options: SearchOptions): Promise<number> {
  const names = NAMES[options.names];
  const env = { ...Object.fromEntries(options.leftOut.map((name) => [name, undefined])), WORKERS: String(options.workers), PAGINATION: 'limit-offset' };
  const { work, kind, port, pid, close } = await serveScratchCatalogue(options.dist, options.database, options.size, env, names.nameOf);
  try {
    const random = randomSource(23);
    const pick = (max: number): number => Math.floor(random() * max);
    const cut = (count: number, shortest: number, longest: number) => distinctTerms(options.size, names.nameOf, count, shortest, longest, pick);
    const longTerms = cut(LONG_TERMS, 3, 8);
    const shortTerms = cut(400, 1, 2);
    const rareTerms = rareTermsOf(options, pick);
    const commonTerms = piecesOf(names.commonWords);
    const paths = {
      detail: Array.from({ length: DETAILS }, () => `/api/v1/shop/product/${1 + pick(options.size)}`),
      long: longTerms.map((term) => searchPath(term, 0)),
      rare: rareTerms.map((term) => searchPath(term, 0)),
      common: Array.from({ length: COMMON_URLS }, () => searchPath(commonTerms[pick(commonTerms.length)]!, pick(50) * 10, 10 + pick(21))),
      short: Array.from({ length: SHORT_URLS }, () => searchPath(shortTerms[pick(shortTerms.length)]!, pick(2_000) * SEARCH_PAGE)),
    };
    const files = Object.fromEntries(Object.entries(paths).map(([name, list]) => {
      const file = join(work, `${name}.paths`);
      writeFileSync(file, `${list.join('\n')}\n`);
      return [name, file];
    })) as Record<keyof typeof paths, string>;
    await checkAnswers(port, options.size, names.nameOf, [longTerms[0]!, shortTerms[0]!, rareTerms[0]!, commonTerms[0]!]);

    const load = (file: string, connections: number, seed: number): Promise<LoadResult> =>
      runWrk({ port, pid, threads: 1, connections, seconds: options.duration, headers: {}, script: 'paths', args: [file, String(seed)] });
    // The first reads of a million rows fill the database's page cache; they are not what is measured.
    await load(files.detail, 4, 1);
    // Each round draws its requests with seeds of its own, so that a later round meets terms and pages
    // the earlier ones did not ask (almost: a round asks a few thousand of 30,000 to 100,000).
    const rounds: LoadResult[][] = [];
    for (let round = 0; round < options.rounds; round += 1) {
      const seed = (n: number): number => n + 10 * round;
      const detail = await load(files.detail, 4, seed(2));
      const long = await load(files.long, 4, seed(3));
      const rare = await load(files.rare, 4, seed(6));
      const common = await load(files.common, 4, seed(7));
      const [beside, short] = await Promise.all([load(files.detail, 4, seed(4)), load(files.short, 2, seed(5))]);
      rounds.push([detail, long, rare, common, beside, short]);
      console.error(`  round ${round + 1}/${options.rounds}: p99 ms ${rounds.at(-1)!.map((r) => r.p99Ms.toFixed(1)).join(' / ')} (detail / 3-8 / rare / common / detail beside / 1-2)`);
    }
    const best = (load: number): LoadResult => rounds.map((r) => r[load]!).reduce((a, b) => (b.p99Ms < a.p99Ms ? b : a));
    const [detail, long, rare, common, beside, short] = [0, 1, 2, 3, 4, 5].map(best) as [LoadResult, LoadResult, LoadResult, LoadResult, LoadResult, LoadResult];

    console.log(`Finding products, uncached: ${options.size.toLocaleString('en')} products (${options.names === 'bench' ? "the bench's names" : "a shop's names"}) on ${kind}, WORKERS=${options.workers}, ${options.duration} s per load, best of ${options.rounds} round${options.rounds === 1 ? '' : 's'} (lowest p99); Node ${process.version}.\n`);
    console.log('| load | connections | requests | req/s | p50 ms | p99 ms | errors | target |');
    console.log('|---|---|---|---|---|---|---|---|');
    const row = (name: string, connections: number, r: LoadResult, target: string): void =>
      console.log(`| ${name} | ${connections} | ${r.requests.toLocaleString('en')} | ${Math.round(r.requestsPerSecond).toLocaleString('en')} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${errorTotal(r.errors)} | ${target} |`);
    row('detail alone', 4, detail, '');
    row(`search, 3-8 characters, of ${longTerms.length.toLocaleString('en')} terms`, 4, long, 'p99 ≤ 50 ms');
    row(`search, rare terms (a handful of matches or none), of ${rareTerms.length.toLocaleString('en')}`, 4, rare, 'as fast as common terms');
    row(`search, common terms (over ${SEARCH_COUNT_BOUND.toLocaleString('en')} matches), new pages`, 4, common, 'p99 ≤ 50 ms');
    row('detail, beside the short searches', 4, beside, 'p99 ≤ 20 ms');
    row('search, 1-2 characters, new offsets', 2, short, 'hold nothing back');
    for (const [r, drawn] of [[long, longTerms.length], [rare, rareTerms.length], [common, COMMON_URLS]] as const) {
      if (r.requests * options.rounds > drawn / 10) console.log(`\n${r.requests.toLocaleString('en')} searches drew from ${drawn.toLocaleString('en')} addresses: some were answered from the cache.`);
    }
    const errors = rounds.flat().reduce((sum, r) => sum + errorTotal(r.errors), 0);
    if (errors > 0) console.error(`\n${errors} requests failed (status 400 or more, or the connection).`);
    return errors > 0 ? 1 : 0;
  } finally {
    await close();
  }
}

function searchPath(term: string, offset: number, limit = SEARCH_PAGE): string {
  return `${V2_PATH}?limit=${limit}&offset=${offset}&search=${encodeURIComponent(term)}`;
}

/**
 * `count` different terms of `shortest` to `longest` characters cut from the folded names of random
 * seeded products, as a user types part of a name; none starts or ends with a space (the service would
 * trim it, and two terms would be one).
 */
function distinctTerms(size: number, nameOf: NameSource, count: number, shortest: number, longest: number, pick: (max: number) => number): string[] {
  const terms = new Set<string>();
  for (let tries = 0; terms.size < count && tries < count * 5; tries++) {
    const name = [...contractFold(nameOf(1 + pick(size)))];
    const length = shortest + pick(longest - shortest + 1);
    const start = pick(Math.max(1, name.length - length + 1));
    const term = name.slice(start, start + length).join('');
    if (term.trim() === term && [...term].length === length) terms.add(term);
  }
  return [...terms];
}

/**
 * Terms in a handful of names or none: a shop's model codes (`kx-4821`, each in a name or two of
 * millions possible), and parts of 3 to 8 characters of names with one letter made one no name has.
 */
function rareTermsOf(options: SearchOptions, pick: (max: number) => number): string[] {
  const { nameOf } = NAMES[options.names];
  const terms = new Set<string>();
  for (let tries = 0; terms.size < RARE_TERMS && tries < RARE_TERMS * 5; tries++) {
    const name = contractFold(nameOf(1 + pick(options.size)));
    const code = /[a-z]{2}-[0-9]{4}/.exec(name)?.[0];
    if (code !== undefined && pick(2) === 0) {
      terms.add(code);
      continue;
    }
    const chars = [...name];
    const length = 3 + pick(6);
    const start = pick(Math.max(1, chars.length - length + 1));
    const part = chars.slice(start, start + length);
    const at = pick(part.length);
    if (part[at] === ABSENT_LETTER) continue;
    part[at] = ABSENT_LETTER;
    const term = part.join('');
    if (term.trim() === term && part.length === length) terms.add(term);
  }
  return [...terms];
}

/** Every part of 3 to 8 characters of the folded `words` (trimmed parts only): terms at least as common as their word. */
function piecesOf(words: readonly string[]): string[] {
  const pieces = new Set<string>();
  for (const word of words) {
    const chars = [...contractFold(word)];
    for (let length = 3; length <= 8; length++) {
      for (let start = 0; start + length <= chars.length; start++) {
        const piece = chars.slice(start, start + length).join('');
        if (piece.trim() === piece) pieces.add(piece);
      }
    }
  }
  return [...pieces];
}

/**
 * Fails the run unless the service counts `terms` as the seed says (to 1,000, and whether that is all
 * of them): the load's answers are not checked one by one.
 */
async function checkAnswers(port: number, size: number, nameOf: NameSource, terms: readonly string[]): Promise<void> {
  const expected = matchingNames(size, terms, 0, nameOf);
  for (const [i, term] of terms.entries()) {
    const response = await fetch(`http://127.0.0.1:${port}${searchPath(term, 0)}`);
    const body = (await response.json()) as { count?: number; count_exact?: boolean };
    const matches = expected[i]!.count;
    const due = { count: Math.min(matches, SEARCH_COUNT_BOUND), count_exact: matches <= SEARCH_COUNT_BOUND };
    if (response.status !== 200 || body.count !== due.count || body.count_exact !== due.count_exact) {
      throw new Error(`search=${term}: status ${response.status}, count ${body.count}, count_exact ${body.count_exact}; expected 200, ${due.count} and ${due.count_exact} (${matches} match)`);
    }
  }
}
