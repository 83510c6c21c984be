import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { foldForSearch, parseProductFilter } from '../../src/catalogue/search.js';

const filterOf = (query: string) => parseProductFilter(new URLSearchParams(query));

describe('foldForSearch', () => {
  it('lower-cases and drops accents, whether composed or not', () => {
    assert.equal(foldForSearch('Crème BRÛLÉE'), 'creme brulee');
    assert.equal(foldForSearch('Cre\u0300me'), 'creme');
    assert.equal(foldForSearch('ÄPFEL'), 'apfel');
    assert.equal(foldForSearch('İstanbul'), 'istanbul');
  });

  it('keeps other scripts, emoji and pattern characters as they are', () => {
    assert.equal(foldForSearch('寿司 🍣 100%_x'), '寿司 🍣 100%_x');
    assert.equal(foldForSearch('한국어'), '한국어');
    assert.equal(foldForSearch('Straße'), 'straße');
  });
});

describe('parseProductFilter', () => {
  it('reads an EAN-13, a UPC-A as 0 and its digits, and trims', () => {
    assert.deepEqual(filterOf('barcode=4006381333931'), { ok: true, filter: { barcode: '4006381333931' } });
    assert.deepEqual(filterOf('barcode=036000291452'), { ok: true, filter: { barcode: '0036000291452' } });
    assert.deepEqual(filterOf('barcode=%204006381333931%0A'), { ok: true, filter: { barcode: '4006381333931' } });
  });

  it('names the parameter of every bad filter', () => {
    assert.deepEqual(filterOf('barcode=4006381333932'), { ok: false, errors: { barcode: ['The EAN-13 check digit is wrong: expected 1, got 2.'] } });
    assert.deepEqual(filterOf('barcode=036000291453'), { ok: false, errors: { barcode: ['The UPC-A check digit is wrong: expected 2, got 3.'] } });
    assert.deepEqual(filterOf('barcode='), { ok: false, errors: { barcode: ['The barcode is empty; give 13 digits (EAN-13) or 12 (UPC-A).'] } });
    assert.deepEqual(Object.keys((filterOf(`barcode=1&search=${'y'.repeat(101)}`) as { errors: object }).errors), ['barcode', 'search']);
  });

  it('folds the search text, counts empty as absent, and allows 100 characters', () => {
    assert.deepEqual(filterOf('search=%20Cr%C3%A8me%20'), { ok: true, filter: { search: 'creme' } });
    assert.deepEqual(filterOf('search=%20'), { ok: true, filter: {} });
    assert.deepEqual(filterOf('search=%CC%81'), { ok: true, filter: {} });
    assert.deepEqual(filterOf(`search=${'🍕'.repeat(100)}`), { ok: true, filter: { search: '🍕'.repeat(100) } });
  });
});
