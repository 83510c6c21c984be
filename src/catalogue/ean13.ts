import { JsonNumber } from './json-number.js';

/** An EAN-13's form before its check digit is checked: exactly 13 ASCII digits. */
export const EAN13_FORM = /^[0-9]{13}$/;

/**
 * Computes the GS1 check digit of the first 12 digits of an EAN-13 barcode.
 *
 * Digits at odd positions (1st, 3rd, ...) weigh 1, at even positions 3; the check digit brings
 * the weighted sum up to a multiple of 10.
 *
 * @example ean13CheckDigit("400638133393") // 1
 */
export function ean13CheckDigit(first12: string): number {
  let sum = 0;
  for (let i = 0; i < 12; i++) {
    const digit = first12.charCodeAt(i) - 48;
    sum += i % 2 === 0 ? digit : digit * 3;
  }
  return (10 - (sum % 10)) % 10;
}

/**
 * Checks a barcode as the API receives it.
 *
 * @returns the reasons it is not a valid EAN-13, or an empty list when it is one.
 * @example barcodeProblems("4006381333931") // []
 */
export function barcodeProblems(value: unknown): string[] {
  if (typeof value === 'number' || value instanceof JsonNumber) {
    return ['Send the barcode as a string of 13 digits, e.g. "4006381333931"; a JSON number loses leading zeros.'];
  }
  if (typeof value !== 'string') {
    return ['The barcode must be a string of 13 digits.'];
  }
  if (!EAN13_FORM.test(value)) {
    return [`An EAN-13 barcode is exactly 13 digits (0-9); got ${describeLength(value)}.`];
  }
  const expected = ean13CheckDigit(value);
  const got = value.charCodeAt(12) - 48;
  return expected === got ? [] : [`EAN-13 check digit is wrong: expected ${expected}, got ${got}.`];
}

function describeLength(value: string): string {
  const length = [...value].length;
  return /^[0-9]*$/.test(value) ? `${length} digits` : `${length} characters, not all digits`;
}
