import SqliteDatabase from 'better-sqlite3';
import { openStore } from '/work/wt/search/src/storage/open-store.js';
import { foldForSearch } from '/work/wt/search/src/catalogue/search.js';
import { seededProduct } from '/work/wt/search/bench/data.js';
const path = '/tmp/scr/m1.db';
const SIZE = 1_000_000;
let st = await openStore({ kind: 'sqlite', path });
await st.close();
const db = new SqliteDatabase(path);
db.pragma('synchronous = OFF');
const ins = db.prepare('INSERT INTO product (name, barcode, price_cents) VALUES (?, ?, ?)');
let t = Date.now();
db.transaction(() => { for (let n = 1; n <= SIZE; n++) { const p = seededProduct(n); ins.run(p.name, p.barcode, p.priceCents); } })();
db.exec('ANALYZE'); db.close();
console.log('seed ms', Date.now() - t);
t = Date.now();
st = await openStore({ kind: 'sqlite', path });
console.log('open+fold ms', Date.now() - t);
const time = async (label: string, f: () => Promise<unknown>) => { const t0 = performance.now(); let r: any; for (let i = 0; i < 5; i++) r = await f(); console.log(label, ((performance.now() - t0) / 5).toFixed(2), 'ms', typeof r === 'object' && 'count' in r ? r.count : ''); };
for (const term of ['a', 'e', 'ka', 'kas', 'kase', 'bergkase', 'muhlenhof', 'crepes', 'zzz', 'oliven 500', 'é', 'tee']) {
  await time(`page ${term}`, () => st.readFilteredPage({ search: foldForSearch(term) }, 0, 20));
}
await time('page kase offset 50000', () => st.readFilteredPage({ search: 'kase' }, 50000, 20));
await time('barcode', () => st.readFilteredPage({ barcode: seededProduct(777777).barcode }, 0, 20));
await time('detail', () => st.findProduct(777777));
await time('list after kase', () => st.listFilteredAfter({ search: 'kase' }, 0, 2000));
await st.close();
