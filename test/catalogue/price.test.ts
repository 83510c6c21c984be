import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonNumber } from '../../src/catalogue/json-number.js';
import { MAX_PRICE_CENTS, formatPrice, parsePrice } from '../../src/catalogue/price.js';

const n = (text: string) => new JsonNumber(text);

describe('parsePrice', () => {
  const accepted: Array<[unknown, number]> = [
    ['12.50', 1250],
    ['12.5', 1250],
    ['12', 1200],
    ['0', 0],
    ['0.00', 0],
    ['0.01', 1],
    ['19.99', 1999],
    ['007.10', 710],
    ['9999999999.99', MAX_PRICE_CENTS],
    [n('12.5'), 1250],
    [n('12.50'), 1250],
    [n('19.99'), 1999],
    [n('0'), 0],
    [n('1000'), 100000],
    [n('9999999999.99'), MAX_PRICE_CENTS],
  ];
  for (const [input, cents] of accepted) {
    it(`reads ${describe_(input)} as ${cents} cents`, () => {
      assert.deepEqual(parsePrice(input), { ok: true, cents });
    });
  }

  const exponent = 'Exponent notation is not accepted; write the price in plain digits, e.g. "1000.00".';
  const refused: Array<[unknown, string]> = [
    [n('1e3'), exponent],
    [n('1E3'), exponent],
    [n('1.5e2'), exponent],
    [n('1e-2'), exponent],
    ['1e3', exponent],
    ['NaN', '"NaN" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    ['Infinity', '"Infinity" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    ['12,50', '"12,50" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    ['', '"" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    [' 12.50', '" 12.50" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    ['+1', '"+1" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    ['.5', '".5" is not a price; write digits with an optional point and up to 2 decimals, e.g. "12.50".'],
    ['-1', 'The price must be zero or more, written without a minus sign.'],
    [n('-1'), 'The price must be zero or more, written without a minus sign.'],
    [n('-0.01'), 'The price must be zero or more, written without a minus sign.'],
    ['12.501', 'The price has more than 2 decimal places.'],
    [n('0.001'), 'The price has more than 2 decimal places.'],
    ['12345678901', 'The price has more than 10 digits before the decimal point.'],
    [n('10000000000.00'), 'The price has more than 10 digits before the decimal point.'],
    [true, 'The price must be a decimal string like "12.50" or a JSON number like 12.5.'],
    [null, 'The price must be a decimal string like "12.50" or a JSON number like 12.5.'],
    [{}, 'The price must be a decimal string like "12.50" or a JSON number like 12.5.'],
  ];
  for (const [input, problem] of refused) {
    it(`refuses ${describe_(input)}`, () => {
      assert.deepEqual(parsePrice(input), { ok: false, problem });
    });
  }
});

describe('formatPrice', () => {
  it('always writes two decimals', () => {
    assert.equal(formatPrice(0), '0.00');
    assert.equal(formatPrice(1), '0.01');
    assert.equal(formatPrice(1250), '12.50');
    assert.equal(formatPrice(1999), '19.99');
    assert.equal(formatPrice(MAX_PRICE_CENTS), '9999999999.99');
  });

  it('round-trips every cent value it is given without float drift', () => {
    for (const cents of [5, 10, 99, 100, 101, 1998, 1999, 123456789, MAX_PRICE_CENTS - 1]) {
      assert.deepEqual(parsePrice(formatPrice(cents)), { ok: true, cents });
    }
  });
});

function describe_(input: unknown): string {
  return input instanceof JsonNumber ? `the JSON number ${input.text}` : JSON.stringify(input);
}
