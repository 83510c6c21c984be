import { JsonNumber } from './json-number.js';
import { truncate } from './truncate.js';

/** Digits a price may have before its point: cents then stay far inside a double's exact integers. */
export const PRICE_WHOLE_DIGITS = 10;
/** Digits after the point: prices are whole cents. */
export const PRICE_DECIMALS = 2;

/** The largest price the catalogue keeps: 10 digits before the point, 2 after. */
export const MAX_PRICE_CENTS = 10 ** (PRICE_WHOLE_DIGITS + PRICE_DECIMALS) - 1;

const PLAIN_DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/;

export type PriceParse = { readonly ok: true; readonly cents: number } | { readonly ok: false; readonly problem: string };

/**
 * Reads a price as the API receives it: a decimal string ("12.50") or a JSON number as written (12.5).
 *
 * The value is read from its decimal text, never through a binary float, and returned as integer cents.
 * Exponent forms, NaN, Infinity, commas, signs other than none, more than 2 decimals or more than
 * 10 digits before the point are refused with a reason.
 *
 * @example parsePrice("12.5") // { ok: true, cents: 1250 }
 */
export function parsePrice(value: unknown): PriceParse {
  let text: string;
  if (typeof value === 'string') {
    text = value;
  } else if (value instanceof JsonNumber) {
    text = value.text;
  } else if (typeof value === 'number') {
    // Only reachable from code that parsed JSON itself; a double has no trustworthy decimal text.
    return refuse('Send the price as a decimal string like "12.50" or a plain JSON number.');
  } else {
    return refuse('The price must be a decimal string like "12.50" or a JSON number like 12.5.');
  }

  if (/[eE]/.test(text) && /^-?[0-9.]+[eE][-+]?[0-9]+$/.test(text)) {
    return refuse('Exponent notation is not accepted; write the price in plain digits, e.g. "1000.00".');
  }
  if (!PLAIN_DECIMAL.test(text)) {
    return refuse(`"${truncate(text)}" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".`);
  }
  if (text.startsWith('-')) {
    return refuse('The price must be zero or more, written without a minus sign.');
  }
  const [whole = '', fraction = ''] = text.split('.');
  if (fraction.length > PRICE_DECIMALS) {
    return refuse(`The price has more than ${PRICE_DECIMALS} decimal places.`);
  }
  const significantWhole = whole.replace(/^0+(?=[0-9])/, '');
  if (significantWhole.length > PRICE_WHOLE_DIGITS) {
    return refuse(`The price has more than ${PRICE_WHOLE_DIGITS} digits before the decimal point.`);
  }
  return { ok: true, cents: Number(significantWhole) * 100 + Number(fraction.padEnd(PRICE_DECIMALS, '0')) };
}

/** What `formatPrice` writes, as a JSON Schema pattern: the price as every answer carries it. */
export const PRICE_TEXT_PATTERN = `^[0-9]{1,${PRICE_WHOLE_DIGITS}}\\.[0-9]{${PRICE_DECIMALS}}$`;

/**
 * Writes integer cents as the API's price string, always with two decimals.
 *
 * @example formatPrice(1250) // "12.50"
 */
export function formatPrice(cents: number): string {
  const whole = Math.trunc(cents / 100);
  const rest = cents - whole * 100;
  return `${whole}.${rest < 10 ? '0' : ''}${rest}`;
}

function refuse(problem: string): PriceParse {
  return { ok: false, problem };
}
