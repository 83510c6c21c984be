import Type, { type Static } from 'typebox';

const pk = Type.Integer({ minimum: 1, description: 'Assigned by the service; never reused.', examples: [1] });
const name = Type.String({ minLength: 1, maxLength: 200, description: 'Trimmed; 1 to 200 characters; no control characters.', examples: ['Espresso 1 kg'] });
const barcode = Type.String({ pattern: '^[0-9]{13}$', description: 'A valid EAN-13 (GS1 check digit), unique in the catalogue.', examples: ['4006381333931'] });
const price = Type.String({ pattern: '^[0-9]{1,10}\\.[0-9]{2}$', description: 'Exact decimal, always two decimals.', examples: ['12.99'] });

export const ProductSchema = Type.Object({ pk, name, barcode, price }, { $id: 'Product', additionalProperties: false });
export type ProductWire = Static<typeof ProductSchema>;

export const ProductListSchema = Type.Array(Type.Ref('Product'), { description: 'Every product, in pk order.' });

export const PageItemSchema = Type.Object({ name, price, barcode }, { title: 'PageItem', additionalProperties: false });
export type PageItemWire = Static<typeof PageItemSchema>;

export const PageSchema = Type.Object(
  {
    count: Type.Integer({ minimum: 0, description: 'Products in the whole catalogue.' }),
    next: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'Absolute URL of the next page, or null.' }),
    previous: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'Absolute URL of the previous page, or null.' }),
    results: Type.Array(PageItemSchema),
  },
  { $id: 'Page', additionalProperties: false },
);
export type PageWire = Static<typeof PageSchema>;

export const NewProductSchema = Type.Object(
  {
    name: Type.String({ description: 'Surrounding white space is trimmed; 1 to 200 characters after trimming; no control characters.' }),
    barcode: Type.String({ description: 'EAN-13 as a string of 13 digits; a JSON number is refused (it would lose leading zeros).' }),
    price: Type.Union([Type.String(), Type.Number()], {
      description: 'A decimal string ("12.50") or a plain JSON number (12.5); ≥ 0, at most 2 decimals, at most 10 digits before the point. Exponent forms are refused.',
    }),
  },
  { $id: 'NewProduct', additionalProperties: false, examples: [{ name: 'Espresso 1 kg', barcode: '4006381333931', price: '12.99' }] },
);
