import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonNumber } from '../../src/catalogue/json-number.js';
import { checkName, checkNewProduct } from '../../src/catalogue/product.js';

describe('checkName', () => {
  it('trims surrounding white space', () => assert.equal(checkName('  Espresso 1 kg \n'), 'Espresso 1 kg'));
  it('counts characters, not UTF-16 units', () => assert.equal(checkName('☕'.repeat(200)), '☕'.repeat(200)));
  it('refuses blank names', () => assert.deepEqual(checkName('   '), { problems: ['The name must not be blank.'] }));
  it('refuses names over 200 characters', () =>
    assert.deepEqual(checkName('x'.repeat(201)), { problems: ['The name is 201 characters long; at most 200 are allowed.'] }));
  it('refuses control characters inside', () =>
    assert.deepEqual(checkName('a\tb'), { problems: ['The name must not contain control characters (such as tabs or line breaks).'] }));
  it('refuses the Unicode line and paragraph separators inside, as other line breaks', () => {
    for (const name of ['a\u2028b', 'a\u2029b', 'a\u0085b', 'a\u000bb']) {
      assert.deepEqual(checkName(name), { problems: ['The name must not contain control characters (such as tabs or line breaks).'] }, JSON.stringify(name));
    }
  });
  it('trims the Unicode line and paragraph separators at either end', () => assert.equal(checkName('\u2028Tea\u2029'), 'Tea'));
  it('refuses unpaired surrogates', () =>
    assert.deepEqual(checkName('a\ud800b'), { problems: ['The name is not valid Unicode (it has an unpaired surrogate).'] }));
  it('refuses non-strings', () => assert.deepEqual(checkName(5), { problems: ['The name must be a string.'] }));
});

describe('checkNewProduct', () => {
  it('accepts a valid product', () => {
    assert.deepEqual(checkNewProduct({ name: ' Tea ', barcode: '4006381333931', price: new JsonNumber('2.5') }), {
      ok: true,
      product: { name: 'Tea', barcode: '4006381333931', priceCents: 250 },
    });
  });

  it('lists every failing field at once, unknown ones included', () => {
    assert.deepEqual(checkNewProduct({ pk: new JsonNumber('3'), barcode: '4006381333937' }), {
      ok: false,
      errors: {
        pk: ['Unknown field; a product is created from name, barcode, price only.'],
        name: ['This field is required.'],
        barcode: ['EAN-13 check digit is wrong: expected 1, got 7.'],
        price: ['This field is required.'],
      },
    });
  });

  it('does not read fields from the prototype', () => {
    const body = JSON.parse('{"__proto__": {"name": "x", "barcode": "4006381333931", "price": "1"}}') as Record<string, unknown>;
    const result = checkNewProduct(body);
    assert.equal(result.ok, false);
    assert.deepEqual(Object.keys(result.ok ? {} : result.errors).sort(), ['__proto__', 'barcode', 'name', 'price']);
  });
});
