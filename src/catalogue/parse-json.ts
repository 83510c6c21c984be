import { parse } from 'lossless-json';
import { JsonNumber } from './json-number.js';

/**
 * Parses JSON text keeping every number as the `JsonNumber` of its text, so that prices never pass
 * through a binary double and exponent forms can be refused. `__proto__` keys stay plain data.
 *
 * @throws SyntaxError for text that is not JSON; RangeError for nesting too deep to parse.
 * @example parseJsonKeepingNumbers('{"price": 12.50}') // { price: JsonNumber { text: "12.50" } }
 */
export function parseJsonKeepingNumbers(text: string): unknown {
  return parse(text, null, (digits) => new JsonNumber(digits));
}
