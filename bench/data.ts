import { ean13CheckDigit } from '../src/catalogue/ean13.js';
import type { NewProduct, Product } from '../src/catalogue/product.js';

/**
 * The seeded catalogue is a pure function of the row number, so the baseline's bodies can be computed
 * without reading the database back: a fresh table hands out pk 1, 2, 3, ... in insertion order.
 */
export function seededProduct(pk: number): Product {
  return { pk, ...seededNewProduct(pk) };
}

export function seededNewProduct(n: number): NewProduct {
  const first12 = `20${String(n).padStart(10, '0')}`;
  return {
    name: `Catalogue item ${n}`,
    barcode: first12 + String(ean13CheckDigit(first12)),
    // Spread over cents so that prices need both decimals; never a float.
    priceCents: (n * 7919) % 100_000,
  };
}

/** Barcodes for POSTs during the run: another prefix than the seed, so they never collide with it. */
export function freshBarcode(sequence: number): string {
  const first12 = `21${String(sequence).padStart(10, '0')}`;
  return first12 + String(ean13CheckDigit(first12));
}

/** A small deterministic generator, so two runs of the bench ask for the same URLs. */
export function randomSource(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
