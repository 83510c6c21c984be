import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { barcodeProblems, ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { JsonNumber } from '../../src/catalogue/json-number.js';

/** Barcodes printed on real products and in the GS1 and ISBN literature. */
const PUBLISHED = [
  '4006381333931', // STABILO pen, the usual EAN-13 example
  '5901234123457', // GS1's own example
  '9780306406157', // ISBN-13 example
  '9780201633610', // Design Patterns (ISBN)
  '5449000000996', // Coca-Cola 330 ml can
  '3017620422003', // Nutella 400 g
  '4000417025005', // Ritter Sport
  '0012345678905', // UPC-A 012345678905 written as EAN-13
];

describe('EAN-13', () => {
  for (const barcode of PUBLISHED) {
    it(`accepts the published barcode ${barcode}`, () => {
      assert.deepEqual(barcodeProblems(barcode), []);
      assert.equal(ean13CheckDigit(barcode.slice(0, 12)), Number(barcode[12]));
    });

    it(`refuses ${barcode} with one digit changed`, () => {
      // Changing any single digit of an EAN-13 always breaks the check digit.
      for (let position = 0; position < 13; position++) {
        const digit = Number(barcode[position]);
        const changed = barcode.slice(0, position) + String((digit + 1) % 10) + barcode.slice(position + 1);
        assert.equal(barcodeProblems(changed).length, 1, changed);
      }
    });
  }

  it('names the expected and the given check digit', () => {
    assert.deepEqual(barcodeProblems('4006381333937'), ['EAN-13 check digit is wrong: expected 1, got 7.']);
  });

  it('refuses wrong lengths and non-digits', () => {
    assert.deepEqual(barcodeProblems('400638133393'), ['An EAN-13 barcode is exactly 13 digits (0-9); got 12 digits.']);
    assert.deepEqual(barcodeProblems('40063813339311'), ['An EAN-13 barcode is exactly 13 digits (0-9); got 14 digits.']);
    assert.deepEqual(barcodeProblems('400638133393X'), ['An EAN-13 barcode is exactly 13 digits (0-9); got 13 characters, not all digits.']);
    assert.deepEqual(barcodeProblems('٤٠٠٦٣٨١٣٣٣٩٣١'), ['An EAN-13 barcode is exactly 13 digits (0-9); got 13 characters, not all digits.']);
    assert.deepEqual(barcodeProblems(''), ['An EAN-13 barcode is exactly 13 digits (0-9); got 0 digits.']);
  });

  it('refuses a JSON number and says to send a string', () => {
    const expected = ['Send the barcode as a string of 13 digits, e.g. "4006381333931"; a JSON number loses leading zeros.'];
    assert.deepEqual(barcodeProblems(new JsonNumber('4006381333931')), expected);
    assert.deepEqual(barcodeProblems(4006381333931), expected);
  });

  it('refuses other types', () => {
    for (const value of [null, true, [], {}]) {
      assert.deepEqual(barcodeProblems(value), ['The barcode must be a string of 13 digits.']);
    }
  });
});
