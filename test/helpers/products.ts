import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import type { NewProduct } from '../../src/catalogue/product.js';
import type { ProductWire } from '../../src/http/contract/schemas.js';
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

/**
 * A search's count at and around its bound of 1,000: a product before the matches, 1,001 that match
 * `alpha` (and `lp`), of which the first 1,000 match `beta` (and `et`) and the first 999 `gamma` (and
 * `mm`), and one after them, for terms the trigram index finds and terms too short for it. Barcodes
 * and prices are the same in every call, so that every database stores the same products.
 */
export function searchBoundCatalogue(): NewProduct[] {
  const names = ['Plain bread'];
  for (let n = 1; n <= 1_001; n += 1) names.push(n <= 999 ? `Gamma beta alpha ${n}` : n === 1_000 ? `Beta alpha ${n}` : `Alpha ${n}`);
  names.push('Plain water');
  return names.map((name, i) => {
    const first12 = `29${String(i).padStart(10, '0')}`;
    return { name, barcode: first12 + String(ean13CheckDigit(first12)), priceCents: 100 };
  });
}

/** The terms of `searchBoundCatalogue`, each with how many of its names hold it. */
export const SEARCH_BOUND_TERMS: ReadonlyArray<readonly [term: string, matches: number]> = [
  ['gamma', 999], ['mm', 999], ['beta', 1_000], ['et', 1_000], ['alpha', 1_001], ['lp', 1_001],
];
