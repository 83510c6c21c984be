import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { parseJsonKeepingNumbers } from '../../src/catalogue/parse-json.js';
import { MAX_NAME_LENGTH, PRODUCT_FIELDS, checkNewProduct } from '../../src/catalogue/product.js';
import { NewProductSchema } from '../../src/http/contract/schemas.js';

// The create route's body schema is not used to validate (checkNewProduct reads the price from its
// text, which a schema cannot): it documents the body. These tests keep it from drifting away from
// what checkNewProduct decides.

/** The service's verdict and the document's on one body, written as JSON text. */
function verdicts(text: string): { service: boolean; schema: boolean } {
  const body = parseJsonKeepingNumbers(text) as Record<string, unknown>;
  return { service: checkNewProduct(body).ok, schema: Value.Check(NewProductSchema, JSON.parse(text)) };
}

const validBarcode = fc.stringMatching(/^[0-9]{12}$/).map((first12) => first12 + String(ean13CheckDigit(first12)));
const validName = fc.string({ minLength: 1, maxLength: MAX_NAME_LENGTH, unit: 'grapheme-ascii' }).filter((s) => s.trim() !== '');
/** A price as JSON text: a decimal string, or a plain number (JSON allows no leading zeros). */
const validPrice = fc.oneof(
  fc.stringMatching(/^[0-9]{1,10}(\.[0-9]{1,2})?$/).map((p) => JSON.stringify(p)),
  fc.stringMatching(/^(0|[1-9][0-9]{0,9})(\.[0-9]{1,2})?$/),
);
const anyJson = fc.jsonValue({ maxDepth: 1 });

describe('the create body schema beside checkNewProduct', () => {
  it('lists exactly the fields checkNewProduct takes, all required', () => {
    assert.deepEqual(Object.keys(NewProductSchema.properties), [...PRODUCT_FIELDS]);
    assert.deepEqual([...NewProductSchema.required].sort(), [...PRODUCT_FIELDS].sort());
    assert.equal(Reflect.get(NewProductSchema, 'additionalProperties'), false);
  });

  it('accepts every body checkNewProduct accepts', () => {
    const field = (name: string, value: fc.Arbitrary<string>) => value.map((json) => `${JSON.stringify(name)}:${json}`);
    const body = fc
      .tuple(field('name', validName.map((n) => JSON.stringify(n))), field('barcode', validBarcode.map((b) => JSON.stringify(b))), field('price', validPrice))
      .chain((fields) => fc.shuffledSubarray(fields, { minLength: 3, maxLength: 3 }))
      .map((fields) => `{${fields.join(',')}}`);
    fc.assert(
      fc.property(body, (text) => {
        const { service, schema } = verdicts(text);
        assert.equal(service, true, text);
        assert.equal(schema, true, text);
      }),
    );
  });

  it('never accepts in the document a body the service refuses for its shape, nor the other way round', () => {
    const product = { name: 'Tea', barcode: '4006381333931', price: '1.00' };
    const shapes: Record<string, unknown>[] = [
      { ...product, extra: 1 },
      { ...product, pk: 1 },
      ...PRODUCT_FIELDS.map((missing) => Object.fromEntries(Object.entries(product).filter(([key]) => key !== missing))),
      { ...product, name: 5 },
      { ...product, name: null },
      { ...product, name: ['Tea'] },
      { ...product, barcode: 4006381333931 },
      { ...product, barcode: null },
      { ...product, price: true },
      { ...product, price: null },
      { ...product, price: { amount: '1.00' } },
    ];
    for (const shape of shapes) {
      const text = JSON.stringify(shape);
      assert.deepEqual(verdicts(text), { service: false, schema: false }, text);
    }
  });

  it('accepts every body the service accepts, whatever JSON its fields hold', () => {
    // The schema may accept more: rules written only in its descriptions (length, check digit,
    // decimals) are checkNewProduct's alone.
    const body = fc.record({ name: fc.oneof(validName, anyJson), barcode: fc.oneof(validBarcode, anyJson), price: fc.oneof(validPrice.map((p) => JSON.parse(p) as string | number), anyJson) });
    fc.assert(
      fc.property(body, (fields) => {
        const text = JSON.stringify(fields);
        const { service, schema } = verdicts(text);
        if (service) assert.equal(schema, true, text);
      }),
    );
  });
});
