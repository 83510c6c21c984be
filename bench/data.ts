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

/** Product `n`'s name: the bench's own (`productName`), or a shop's it was not designed for (`shopName`). */
export type NameSource = (n: number) => string;

/**
 * Product `n` of the seed, a pure function of the row number: a fresh table hands out pk 1, 2, 3, ...
 * in insertion order, so the expected answers need no read of the database.
 */
export function seededProduct(n: number, names: NameSource = productName): SeededProduct {
  return {
    pk: n,
    name: names(n),
    barcode: withCheckDigit(`20${String(n).padStart(10, '0')}`),
    // Spread over cents so that prices need both decimals; never a float.
    priceCents: (n * 7919) % 100_000,
  };
}

// Words of the seeded names: some with accents, so that search has folding to do.
const BRANDS = ['Alpenhof', 'Bäckerhaus', 'Côte Verte', 'Dolce Vita', 'Eisberg', 'Fjällbrud', 'Gärtnerei', 'Hofgut', 'Île Bleue', 'Jardin', 'Kaffeerösterei', 'Landliebe', 'Mühlenhof', 'Nordküste', 'Olivar', 'Príncipe', 'Quellblick', 'Rosenthal', 'Sonnenfeld', 'Terre d’Été', 'Ursprung', 'Vallée', 'Weidegut', 'Zürichsee'];
const KINDS = ['Bio', 'Classic', 'Crème', 'Delikatess', 'Extra', 'Feine', 'Frische', 'Gourmet', 'Hausgemachte', 'Légère', 'Premium', 'Rustikale', 'Süße', 'Würzige', 'Zarte', 'Naturtrübe'];
const GOODS = [
  'Äpfel', 'Apfelsaft', 'Baguette', 'Bergkäse', 'Birnen', 'Brioche', 'Butter', 'Café', 'Camembert', 'Champignons', 'Chorizo', 'Crêpes',
  'Espresso', 'Feigen', 'Frischkäse', 'Gelée', 'Gnocchi', 'Haferflocken', 'Honig', 'Joghurt', 'Kakao', 'Karotten', 'Kartoffeln', 'Ketchup',
  'Lachs', 'Linsen', 'Mandeln', 'Marmelade', 'Mozzarella', 'Müsli', 'Nüsse', 'Oliven', 'Orangensaft', 'Paprika', 'Pasta', 'Pesto', 'Quark',
  'Ravioli', 'Reis', 'Rösti', 'Salami', 'Schokolade', 'Senf', 'Spätzle', 'Tee', 'Tomaten', 'Vanillezucker', 'Walnüsse', 'Zwieback',
];
const SIZES = ['100 g', '125 g', '200 g', '250 g', '400 g', '500 g', '750 g', '1 kg', '0,2 l', '0,5 l', '0,75 l', '1 l', '6 Stück', '12 Stück'];

/** The words product `n`'s name is made of, picked by a fixed integer hash of `n`. */
export function nameParts(n: number): { brand: string; kind: string; good: string; size: string } {
  let h = Math.imul(n ^ 0x5bd1e995, 0x9e3779b1) >>> 0;
  const pick = <T>(list: readonly T[]): T => {
    const item = list[h % list.length]!;
    h = (Math.imul(h ^ (h >>> 13), 0x85ebca6b) + 0x2f) >>> 0;
    return item;
  };
  return { brand: pick(BRANDS), kind: pick(KINDS), good: pick(GOODS), size: pick(SIZES) };
}

/** Product `n`'s name: brand, kind, goods and size, e.g. "Mühlenhof Feine Crêpes 250 g". */
export function productName(n: number): string {
  const { brand, kind, good, size } = nameParts(n);
  return `${brand} ${kind} ${good} ${size}`;
}

/** The words of the seeded names, for a search load that finds something. */
export const NAME_WORDS: readonly string[] = [...BRANDS, ...KINDS, ...GOODS];

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
