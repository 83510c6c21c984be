import { startServer } from '../test/helpers/server.js';
const s = await startServer({ kind: 'sqlite', path: ':memory:' });
const post = (b: object) => fetch(`${s.url}/api/v1/shop/product/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) });
await post({ name: 'Espresso 1 kg', barcode: '4006381333931', price: '12.99' });
await post({ name: 'Nutella 400 g', barcode: '3017620422003', price: 3.49 });
for (const q of ['/api/v1/shop/products?barcode=3017620422003', '/api/v2/shop/products?search=NUTELLA', '/api/v1/shop/products?barcode=301762042200', '/api/v1/shop/products?search=%C3%A9spresso', '/api/v2/shop/products?search=e&limit=1'])
  console.log(q, await (await fetch(s.url + q)).text());
await s.stop();
