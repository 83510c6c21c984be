/**
 * Names of a shop's catalogue that the service was not designed around, for `npm run bench -- --search
 * --names shop`: brands of one to four words in several languages (a few big ones, a long tail of small
 * ones), goods in ten languages and three scripts, sizes and counts written every way shops write them
 * (`1,5 l`, `6 x 0,33 l`, `2 × 125 g`, `12 Stück`), percentages, article numbers and model codes. A few
 * words are in a tenth of all names (`Bio`, `500 g`); most terms are rare. Each name is a pure
 * function of its row number, as the bench's own names are.
 */
import { randomSource } from './data.js';

/** The big brands, most common first: the first is in about one name of twenty. */
const BIG_BRANDS = [
  'Ja!', 'Gut & Günstig', 'K-Classic', 'Dr. Oetker', 'Bonne Maman', "Ben & Jerry's", 'La Vache qui rit', 'Rio Mare', 'El Pozo',
  'Mlekovita', 'Arla', 'Barilla', 'Müller', 'Zott', 'Président', 'Hohes C', 'Coca-Cola', 'Ritter Sport', 'Lavazza', 'Nestlé',
  'Kühne', 'Knorr', 'Maggi', 'Bauer', 'Weihenstephan', 'Alnatura', 'dmBio', 'REWE Beste Wahl', 'Milka', 'Haribo',
];
/** Parts that the long tail of small brands is made of, in the languages their makers write. */
const TAIL_PATTERNS: ReadonlyArray<(a: string, b: string) => string> = [
  (a, b) => `Hofkäserei ${a}${b}`,
  (a, b) => `Cascina ${a}${b}a`,
  (a, b) => `Bodega ${a}${b}o`,
  (a, b) => `Gospodarstwo ${a}${b}ski`,
  (a, b) => `Domaine de ${a}${b}`,
  (a, b) => `${a}${b} & Söhne`,
  (a, b) => `Mühle ${a}${b}`,
  (a, b) => `${a}${b}gården`,
  (a, b) => `Fattoria ${a}${b}i`,
  (a, b) => `Quinta do ${a}${b}`,
];
const SYLLABLES = ['Al', 'Ber', 'Cas', 'Dor', 'El', 'Fal', 'Gor', 'Hel', 'Ir', 'Jun', 'Kal', 'Lor', 'Mar', 'Nor', 'Ol', 'Pel', 'Quin', 'Ros', 'Sal', 'Tor', 'Ul', 'Val', 'Wen', 'Zel', 'Brü', 'Grä', 'Lø', 'Ñan', 'Çe', 'Źr'];
const ENDINGS = ['berg', 'dal', 'feld', 'hof', 'mont', 'ra', 'sen', 'tal', 'ven', 'wald', 'ez', 'ino', 'ów', 'ås', 'eau'];
/** Small brands: 30 × 30 × 15 × 10 = 135,000 of them, each in a handful of names. */
const TAIL_BRANDS = SYLLABLES.length * SYLLABLES.length * ENDINGS.length * TAIL_PATTERNS.length;

/** Goods, in ten languages and three scripts; the first of each list is its most common. */
const GOODS = [
  'Vollmilch', 'Bergkäse', 'Frischkäse', 'Leberwurst', 'Brötchen', 'Sauerkraut', 'Spätzle', 'Schwarzbrot', 'Johannisbeersaft', 'Weißwurst',
  'Crème fraîche', 'Pâté de campagne', 'Petits pois', 'Comté affiné', 'Confiture d’abricots', 'Pain de mie', 'Œufs frais', 'Bûche de chèvre',
  'Prosciutto crudo', 'Caffè macinato', 'Passata di pomodoro', 'Grana Padano', 'Olio extravergine', 'Gnocchi di patate', 'Aceto balsamico',
  'Jamón serrano', 'Aceitunas rellenas', 'Queso manchego', 'Turrón de Jijona', 'Piña en almíbar', 'Chorizo ibérico',
  'Żurek', 'Pierogi ruskie', 'Ogórki kiszone', 'Kiełbasa śląska', 'Twaróg półtłusty', 'Miód wielokwiatowy',
  'Knäckebröd', 'Lingonsylt', 'Kanelbullar', 'Ärtsoppa', 'Hagelslag', 'Stroopwafels', 'Pindakaas', 'Açúcar mascavado', 'Pão de forma',
  'Çay', 'Pekmez', 'Sucuk', 'Ελαιόλαδο', 'Φέτα', 'Μέλι θυμαρίσιο', '緑茶', '醤油', '味噌', 'ラーメン', '김치', '고추장',
];
/** Words many names share, most common first: `Bio` is in about a tenth of all names. */
const QUALIFIERS = ['Bio', 'Classic', 'Light', 'Vegan', 'Family Pack', 'Premium', 'extra fein', 'sans sucre', 'senza glutine', 'laktosefrei', 'XXL', 'Mini'];
const VARIANTS = [
  'Erdbeere', 'fraise', 'fragola', 'fresa', 'truskawka', 'Vanille', 'Zitrone', 'citron', 'limone', 'Kirsche', 'Nuss-Nougat', 'Zartbitter',
  'natur', 'geräuchert', 'mild', 'pikant', 'scharf', 'fumé', 'piccante', 'ahumado', 'słodki', 'Typ 405', 'Typ 1050', 'Nr. 5', 'Nr. 12', '00',
];

/** Picks index i of a list of `n` with a weight of 1 / (i + 1): Zipf's law, as words in names are. */
function zipf(n: number, random: () => number): number {
  const total = Math.log(n) + 0.5772156649 + 1 / (2 * n);
  const target = random() * total;
  let sum = 0;
  for (let i = 0; i < n; i += 1) {
    sum += 1 / (i + 1);
    if (sum >= target) return i;
  }
  return n - 1;
}

function pickOf<T>(list: readonly T[], random: () => number): T {
  return list[Math.floor(random() * list.length)]!;
}

/** A size or count as shops write it: `500 g`, `1,5 l`, `6 x 0,33 l`, `2 × 125 g`, `12 Stück`, `750ml`. */
function size(random: () => number): string {
  const grams = pickOf([50, 75, 100, 125, 150, 180, 200, 250, 300, 400, 450, 500, 750, 1000], random);
  switch (Math.floor(random() * 8)) {
    case 0:
    case 1:
      return `${grams} g`;
    case 2:
      return `${pickOf(['0,2', '0,33', '0,5', '0,75', '1', '1,5', '2'], random)} l`;
    case 3:
      return `${pickOf([4, 6, 12, 24], random)} x ${pickOf(['0,25', '0,33', '0,5'], random)} l`;
    case 4:
      return `${pickOf([2, 3, 4], random)} × ${grams} g`;
    case 5:
      return `${pickOf([6, 10, 12, 20, 30], random)} ${pickOf(['Stück', 'pcs', 'pièces', 'szt.'], random)}`;
    case 6:
      return `${grams * 3}ml`;
    default:
      return `${(grams / 1000).toFixed(1).replace('.', ',')} kg`;
  }
}

/** A small brand: one of `TAIL_BRANDS`, each made of syllables in a pattern of its language. */
function tailBrand(index: number): string {
  const pattern = TAIL_PATTERNS[index % TAIL_PATTERNS.length]!;
  let rest = Math.floor(index / TAIL_PATTERNS.length);
  const first = SYLLABLES[rest % SYLLABLES.length]!;
  rest = Math.floor(rest / SYLLABLES.length);
  const second = SYLLABLES[rest % SYLLABLES.length]!.toLowerCase();
  const ending = ENDINGS[Math.floor(rest / SYLLABLES.length) % ENDINGS.length]!;
  return pattern(first, `${second}${ending}`);
}

/** A model code, e.g. `KX-4821`: in a handful of names at most (6.76 million codes). */
export function modelCode(random: () => number): string {
  const letter = () => String.fromCharCode(65 + Math.floor(random() * 26));
  return `${letter()}${letter()}-${String(Math.floor(random() * 10_000)).padStart(4, '0')}`;
}

/**
 * Product `n`'s name in the shop's catalogue: brand (a big one in a third of names), an optional word
 * many names share, the goods, an optional variant, the size, and in some names an article number
 * or a model code.
 *
 * @example shopName(1) // e.g. "Cascina Toralberg Bio Grana Padano fragola 2 × 125 g"
 */
export function shopName(n: number): string {
  const random = randomSource(Math.imul(n, 0x9e3779b1) ^ 0x2545f491);
  const brand = random() < 0.35 ? BIG_BRANDS[zipf(BIG_BRANDS.length, random)]! : tailBrand(Math.floor(random() * TAIL_BRANDS));
  const parts = [brand];
  if (random() < 0.3) parts.push(QUALIFIERS[zipf(QUALIFIERS.length, random)]!);
  // Half the goods by Zipf's law, half evenly: the most common is then in about one name of nine.
  parts.push(GOODS[random() < 0.5 ? zipf(GOODS.length, random) : Math.floor(random() * GOODS.length)]!);
  if (random() < 0.4) parts.push(VARIANTS[zipf(VARIANTS.length, random)]!);
  parts.push(size(random));
  const tag = random();
  if (tag < 0.25) parts.push(modelCode(random));
  else if (tag < 0.35) parts.push(`Art. ${100_000 + Math.floor(random() * 900_000)}`);
  return parts.join(' ');
}

/**
 * Terms that many names hold (each of them at least one name in 200, so more than 1,000 at a
 * million): the big brands, the words many names share and the most common goods, variants and units.
 */
export const SHOP_COMMON_WORDS: readonly string[] = [...BIG_BRANDS.slice(0, 8), ...QUALIFIERS.slice(0, 3), ...GOODS.slice(0, 6), ...VARIANTS.slice(0, 3), '500 g', '250 g', 'Stück'];
