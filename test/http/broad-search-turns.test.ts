import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openSqliteConnection } from '../../src/storage/sqlite/driver.js';
import { databaseUrl, spawnServer } from '../helpers/child-server.js';
import { send } from '../helpers/http.js';
import { insertManyProducts } from '../helpers/many-products.js';
import { sqlite } from '../helpers/stores.js';

/** How many products the catalogue holds: each search below reads every name, in pieces. */
const PRODUCTS = 100_000;
/** Clients each asking for broad searches one after another, as a storefront's search box would. */
const SEARCHERS = 16;

// How long a detail read waits beside broad searches is a benchmark figure (`npm run bench -- --search`,
// "detail, beside the short searches"); what holds on any machine is the order: the broad searches take
// turns, and a detail read does not queue behind the ones sent before it.
describe('broad searches on SQLite', () => {
  it('take turns without holding back a detail read sent after them', { timeout: 600_000 }, async (t) => {
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
    /** Searches answered so far, and per detail read, how many of those sent before it were still unanswered at its answer. */
    let answered = 0;
    let sent = 0;
    let waiting: Array<() => void> = [];
    const searcher = async (client: number): Promise<void> => {
      // A different offset each time, so that no answer comes from the page cache. Two letters in no name:
      // a search of 1-2 characters reads the names in pieces until it has counted 1,001 matches, so these
      // read every piece, taking turns, where a common term would stop after its first pieces.
      for (let n = client; searching; n += SEARCHERS) {
        sent += 1;
        const res = await send(`${server.url}/api/v2/shop/products?limit=1&offset=${n}&search=${['zq', 'qz'][n % 2]!}`);
        assert.equal(res.status, 200, res.text);
        answered += 1;
        for (const resolve of waiting) resolve();
        waiting = [];
      }
    };
    const searchers = Array.from({ length: SEARCHERS }, (_, client) => searcher(client));
    const searchersEnded = Promise.all(searchers);
    /** Resolves at the next answer to a search; rejects if a searcher fails. */
    const nextSearch = (): Promise<unknown> => Promise.race([new Promise<void>((resolve) => waiting.push(resolve)), searchersEnded]);
    // Every client has a search running or queued.
    while (answered < SEARCHERS) await nextSearch();

    const overtaken: number[] = [];
    try {
      for (let i = 0; i < 5; i += 1) {
        // The searches sent before this read: every client has one in flight now.
        const ahead = sent;
        const res = await send(`${server.url}/api/v1/shop/product/5`);
        assert.equal(res.status, 200, res.text);
        overtaken.push(Math.max(0, ahead - answered));
        await nextSearch();
      }
    } finally {
      searching = false;
      await Promise.all(searchers);
    }
    t.diagnostic(`searches sent before each detail read and still unanswered at its answer: ${overtaken.join(', ')}`);
    // Had the read queued behind the searches, every one sent before it would have been answered first.
    assert.ok(
      overtaken.every((count) => count > 0),
      `searches sent before each detail read and still unanswered at its answer: ${overtaken.join(', ')}`,
    );
  });
});
