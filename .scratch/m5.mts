import { openStore } from '../src/storage/open-store.js';
import { seededProduct } from '../bench/data.js';
const st = await openStore({ kind: 'postgres', url: 'postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3Dscratch_search_m' });
const k = st as any;
for (const [label, f] of [['fold probe', () => k.foldPendingNames()], ['v1 barcode', () => st.listFilteredAfter({ barcode: seededProduct(777777).barcode }, 0, 2000)], ['detail', () => st.findProduct(777777)]] as const) {
  await f(); const t = performance.now(); for (let i = 0; i < 50; i++) await f(); console.log(label, ((performance.now() - t) / 50).toFixed(2), 'ms');
}
await st.close();
