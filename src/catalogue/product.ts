import { barcodeProblems } from './ean13.js';
import { parsePrice } from './price.js';

/** A product as the catalogue keeps it. Money is integer cents. */
export interface Product {
  readonly pk: number;
  readonly name: string;
  readonly barcode: string;
  readonly priceCents: number;
}

/** A product that has passed every rule and waits for its `pk`. */
export interface NewProduct {
  readonly name: string;
  readonly barcode: string;
  readonly priceCents: number;
}

/** Field name to the messages that say what was wrong with it. */
export type FieldErrors = Record<string, string[]>;

export type NewProductCheck = { readonly ok: true; readonly product: NewProduct } | { readonly ok: false; readonly errors: FieldErrors };

export const PRODUCT_FIELDS = ['name', 'barcode', 'price'] as const;

/** The largest pk: 2^53 - 1, the largest whole number a JSON client (JavaScript) reads exactly. */
export const MAX_PK = Number.MAX_SAFE_INTEGER;
export const MAX_NAME_LENGTH = 200;

const REQUIRED = 'This field is required.';

/**
 * Checks a decoded request body against every product rule and reports every failing field at once.
 *
 * The body must already be a plain object; numbers in it are expected as `JsonNumber`s.
 */
export function checkNewProduct(body: Readonly<Record<string, unknown>>): NewProductCheck {
  const errors: FieldErrors = {};
  const add = (field: string, messages: string[]): void => {
    // defineProperty, because assigning a field named "__proto__" would replace the prototype.
    if (messages.length > 0) Object.defineProperty(errors, field, { value: messages, enumerable: true, writable: true, configurable: true });
  };

  for (const key of Object.keys(body)) {
    if (!(PRODUCT_FIELDS as readonly string[]).includes(key)) {
      add(key, [`Unknown field; a product is created from ${PRODUCT_FIELDS.join(', ')} only.`]);
    }
  }

  const has = (field: string): boolean => Object.hasOwn(body, field);
  let name = '';
  if (!has('name')) add('name', [REQUIRED]);
  else {
    const checked = checkName(body['name']);
    if (typeof checked === 'string') name = checked;
    else add('name', checked.problems);
  }
  if (!has('barcode')) add('barcode', [REQUIRED]);
  else add('barcode', barcodeProblems(body['barcode']));

  let priceCents = 0;
  if (!has('price')) add('price', [REQUIRED]);
  else {
    const price = parsePrice(body['price']);
    if (price.ok) priceCents = price.cents;
    else add('price', [price.problem]);
  }

  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return { ok: true, product: { name, barcode: body['barcode'] as string, priceCents } };
}

/**
 * Trims a product name and checks it: 1 to 200 characters (code points), no control characters or
 * line breaks (U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR included), well-formed Unicode.
 *
 * @returns the trimmed name, or the reasons it is refused.
 */
export function checkName(value: unknown): string | { problems: string[] } {
  if (typeof value !== 'string') return { problems: ['The name must be a string.'] };
  if (!value.isWellFormed()) return { problems: ['The name is not valid Unicode (it has an unpaired surrogate).'] };
  const name = value.trim();
  const problems: string[] = [];
  const length = [...name].length;
  if (length === 0) problems.push('The name must not be blank.');
  if (length > MAX_NAME_LENGTH) problems.push(`The name is ${length} characters long; at most ${MAX_NAME_LENGTH} are allowed.`);
  // U+2028 and U+2029 are not Cc but break lines all the same (in editors, logs, JavaScript strings).
  if (/[\p{Cc}\u2028\u2029]/u.test(name)) problems.push('The name must not contain control characters (such as tabs or line breaks).');
  return problems.length > 0 ? { problems } : name;
}
