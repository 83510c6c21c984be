import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openSqliteConnection } from '../../src/storage/sqlite/driver.js';
import { databaseUrl, spawnServer } from '../helpers/child-server.js';
import { send } from '../helpers/http.js';
import { insertManyProducts } from '../helpers/many-products.js';
import { sqlite } from '../helpers/stores.js';

/** How many products the catalogue holds; more makes each broad search read longer. */
const PRODUCTS = Number(process.env.BROAD_SEARCH_PRODUCTS ?? 100_000);
/** Clients each asking for broad searches one after another, as a storefront's search box would. */
const SEARCHERS = Number(process.env.BROAD_SEARCH_CLIENTS ?? 16);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

describe('broad searches on SQLite', () => {
  it('leave the one thread to other requests between their reads', { timeout: 180_000 }, async (t) => {
    const { location, drop } = await sqlite.create();
    t.after(drop);
    // The service in a process of its own, as in production: this process's clients are never held up.
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location) });
    t.after(() => server.stop());

    const db = openSqliteConnection(location.kind === 'sqlite' ? location.path : '');
    try {
      db.exec('BEGIN');
      insertManyProducts(db, PRODUCTS, '2');
      db.exec('COMMIT');
    } finally {
      db.close();
    }

    let searching = true;
    let searches = 0;
    let waiting: Array<() => void> = [];
    const searcher = async (client: number): Promise<void> => {
      // A different offset each time, so that no answer comes from the page cache.
      for (let n = client; searching; n += SEARCHERS) {
        const res = await send(`${server.url}/api/v2/shop/products?limit=1&offset=${n}&search=${'ea'[n % 2]!}`);
        assert.equal(res.status, 200, res.text);
        searches += 1;
        for (const resolve of waiting) resolve();
        waiting = [];
      }
    };
    const searchers = Array.from({ length: SEARCHERS }, (_, client) => searcher(client));
    const searchersEnded = Promise.all(searchers);
    /** Resolves at the next answer to a search; rejects if a searcher fails. */
    const nextSearch = (): Promise<unknown> => Promise.race([new Promise<void>((resolve) => waiting.push(resolve)), searchersEnded]);
    // Every client has a search running or queued.
    while (searches < SEARCHERS) await nextSearch();

    const took: number[] = [];
    const [searchesBefore, windowStart] = [searches, performance.now()];
    let searchRate = 0;
    try {
      for (let i = 0; i < 11; i += 1) {
        const started = performance.now();
        const res = await send(`${server.url}/api/v1/shop/product/5`);
        took.push(performance.now() - started);
        assert.equal(res.status, 200, res.text);
        // The next read once a search has been answered: each one is measured while searches go on.
        await nextSearch();
      }
      searchRate = ((searches - searchesBefore) * 1000) / (performance.now() - windowStart);
    } finally {
      searching = false;
      await Promise.all(searchers);
    }
    t.diagnostic(`${PRODUCTS} products, ${SEARCHERS} clients searching: detail reads took ${took.map((ms) => ms.toFixed(0)).join(', ')} ms, median ${median(took).toFixed(0)}; ${searchRate.toFixed(1)} searches/s`);
    assert.ok(median(took) < 100, `a detail read took ${median(took).toFixed(0)} ms (median) while broad searches ran`);
  });
});
