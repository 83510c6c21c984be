import pg from 'pg';
import { openStore } from '../src/storage/open-store.js';
import { foldForSearch } from '../src/catalogue/search.js';
import { seededProduct } from '../bench/data.js';
const which = process.argv[2]!;
const SIZE = 1_000_000;
const url = 'postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3Dscratch_search_m';
if (which === 'postgres' && process.argv[3] === 'seed') {
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await admin.connect(); await admin.query('drop schema if exists scratch_search_m cascade; create schema scratch_search_m'); await admin.end();
  const st = await openStore({ kind: 'postgres', url }); await st.close();
  const c = new pg.Client({ connectionString: url }); await c.connect();
  const t = Date.now();
  for (let from = 1; from <= SIZE; from += 20000) {
    const names: string[] = [], folded: string[] = [], barcodes: string[] = [], prices: number[] = [];
    for (let n = from; n < from + 20000; n++) { const p = seededProduct(n); names.push(p.name); folded.push(foldForSearch(p.name)); barcodes.push(p.barcode); prices.push(p.priceCents); }
    await c.query('INSERT INTO product (name, name_folded, barcode, price_cents) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])', [names, folded, barcodes, prices]);
  }
  await c.query('VACUUM ANALYZE product'); await c.end();
  console.log('seed ms', Date.now() - t);
}
const st = await openStore(which === 'sqlite' ? { kind: 'sqlite', path: '/tmp/scr/m1.db' } : { kind: 'postgres', url });
const time = async (label: string, f: () => Promise<unknown>) => { await f(); const t0 = performance.now(); let r: any; for (let i = 0; i < 5; i++) r = await f(); console.log(which, label, ((performance.now() - t0) / 5).toFixed(2), 'ms', r && typeof r === 'object' && 'count' in r ? r.count : ''); };
for (const term of ['a', 'e', 'ka', 'kas', 'kase', 'bergkase', 'muhlenhof', 'crepes', 'zzz', 'oliven 500', 'tee', 'premium', 'feine spa'])
  await time(`page ${term}`, () => st.readFilteredPage({ search: foldForSearch(term) }, 0, 20));
await time('page kase offset 40000', () => st.readFilteredPage({ search: 'kase' }, 40000, 20));
await time('barcode', () => st.readFilteredPage({ barcode: seededProduct(777777).barcode }, 0, 20));
await time('detail', () => st.findProduct(777777));
await st.close();
