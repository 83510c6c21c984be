/**
 * The seeded catalogue, written without the service's code: the bench checks the service's answers
 * against bodies it builds from these, so a bug in the service's own serializers cannot hide in both.
 */
export interface SeededProduct {
  readonly pk: number;
  readonly name: string;
  readonly barcode: string;
  readonly priceCents: number;
}

/**
 * Product `n` of the seed, a pure function of the row number: a fresh table hands out pk 1, 2, 3, ...
 * in insertion order, so the expected answers need no read of the database.
 */
export function seededProduct(n: number): SeededProduct {
  return {
    pk: n,
    name: `Catalogue item ${n}`,
    barcode: withCheckDigit(`20${String(n).padStart(10, '0')}`),
    // Spread over cents so that prices need both decimals; never a float.
    priceCents: (n * 7919) % 100_000,
  };
}

/**
 * Barcodes for creates: prefix 21, so they never collide with the seed's 20. The load's own
 * barcodes come from the same numbering, computed in `wrk/create.lua`.
 */
export function freshBarcode(sequence: number): string {
  return withCheckDigit(`21${String(sequence).padStart(10, '0')}`);
}

/** The GS1 check digit appended to 12 digits: odd positions weigh 1, even ones 3. */
export function withCheckDigit(first12: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(first12[i]) * (i % 2 === 0 ? 1 : 3);
  return `${first12}${(10 - (sum % 10)) % 10}`;
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
