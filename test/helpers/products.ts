import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import type { ProductWire } from '../../src/http/schemas.js';
import { postJson, send } from './http.js';

let sequence = 0;

/** A valid EAN-13 that no other call in this process returns. */
export function uniqueBarcode(): string {
  sequence += 1;
  const first12 = `20${String(process.pid % 10000).padStart(4, '0')}${String(sequence).padStart(6, '0')}`;
  return first12 + String(ean13CheckDigit(first12));
}

/** Creates a product through the API and returns its body; fails the test on anything but 201. */
export async function createProduct(baseUrl: string, fields: Partial<Omit<ProductWire, 'pk'>> = {}): Promise<ProductWire> {
  const body = { name: `Product ${sequence + 1}`, barcode: uniqueBarcode(), price: '1.00', ...fields };
  const res = await postJson(`${baseUrl}/api/v1/shop/product/`, JSON.stringify(body));
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json as ProductWire;
}

/** The whole catalogue as the v1 list returns it. */
export async function listAll(baseUrl: string): Promise<ProductWire[]> {
  const res = await send(`${baseUrl}/api/v1/shop/products`);
  if (res.status !== 200) throw new Error(`list failed: ${res.status}`);
  return res.json as ProductWire[];
}

/** How many products the catalogue holds, as the v2 listing counts them. */
export async function countAll(baseUrl: string): Promise<number> {
  const res = await send(`${baseUrl}/api/v2/shop/products?limit=1`);
  if (res.status !== 200) throw new Error(`count failed: ${res.status}`);
  return (res.json as { count: number }).count;
}
