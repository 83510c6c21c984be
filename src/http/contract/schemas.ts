import Type, { type Static, type TSchema } from 'typebox';
import { EAN13_FORM } from '../../catalogue/ean13.js';
import { PRICE_DECIMALS, PRICE_TEXT_PATTERN, PRICE_WHOLE_DIGITS } from '../../catalogue/price.js';
import { MAX_NAME_LENGTH, PRODUCT_FIELDS } from '../../catalogue/product.js';
import { SEARCH_COUNT_BOUND } from '../../catalogue/search.js';

// The wire shapes, built from the catalogue's own rules so that the document, the answers' checks
// and the page's types follow a change of rule. test/http/create-schema.test.ts checks the create
// body's schema against checkNewProduct, which is what really decides.

const pk = Type.Integer({ minimum: 1, description: 'Assigned by the service; never reused.', examples: [1] });
const name = Type.String({
  minLength: 1,
  maxLength: MAX_NAME_LENGTH,
  description: `Trimmed; 1 to ${MAX_NAME_LENGTH} characters; no control characters.`,
  examples: ['Espresso 1 kg'],
});
const barcode = Type.String({ pattern: EAN13_FORM.source, description: 'A valid EAN-13 (GS1 check digit), unique in the catalogue.', examples: ['4006381333931'] });
const price = Type.String({ pattern: PRICE_TEXT_PATTERN, description: 'Exact decimal, always two decimals.', examples: ['12.99'] });

const productFields = { pk, name, barcode, price };
export const ProductSchema = Type.Object(productFields, { $id: 'Product', additionalProperties: false });
export type ProductWire = Static<typeof ProductSchema>;

export const ProductListSchema = Type.Array(Type.Ref('Product'), { description: 'Every product, in pk order.' });

export const PageItemSchema = Type.Object({ name, price, barcode }, { title: 'PageItem', additionalProperties: false });
export type PageItemWire = Static<typeof PageItemSchema>;

export const PageSchema = Type.Object(
  {
    count: Type.Integer({
      minimum: 0,
      description: `Products in the whole catalogue, or matching the filters. With \`search\`, counted up to ${SEARCH_COUNT_BOUND.toLocaleString('en')}: when more match, \`count\` is ${SEARCH_COUNT_BOUND} and \`count_exact\` false.`,
    }),
    count_exact: Type.Optional(
      Type.Boolean({
        description: `Present only with \`search\`: true when \`count\` is the number of matches (${SEARCH_COUNT_BOUND.toLocaleString('en')} or fewer), false when more than ${SEARCH_COUNT_BOUND.toLocaleString('en')} match. \`next\` is given while another match follows the page, also past ${SEARCH_COUNT_BOUND.toLocaleString('en')}.`,
      }),
    ),
    next: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'Absolute URL of the next page, or null.' }),
    previous: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'Absolute URL of the previous page, or null.' }),
    results: Type.Array(PageItemSchema),
  },
  { $id: 'Page', additionalProperties: false },
);
export type PageWire = Static<typeof PageSchema>;

/**
 * A page filtered by `search`: the Page with `count_exact` always there. Its answers are written by
 * this schema, which puts `count_exact` beside `count`: the route's own serializer writes a property
 * the schema does not require after all the others.
 */
export const SearchPageSchema = Type.Required(PageSchema);

export const ChangeSchema = Type.Object(
  {
    version: Type.Integer({ minimum: 1, description: 'The version of this change: the product\'s last.' }),
    pk,
    // Written out with `type: [object, null]` rather than a union with a $ref to Product: the compiled
    // serializer then tests for null instead of validating each product against both branches, which
    // was a tenth of a full sync's time.
    product: Type.Unsafe<ProductWire | null>({
      ...Type.Object(productFields, { additionalProperties: false }),
      type: ['object', 'null'],
      description: 'The product as it is now (a Product), or null: removed.',
    }),
  },
  { $id: 'Change', additionalProperties: false },
);
export type ChangeWire = Static<typeof ChangeSchema>;

export const ChangePageSchema = Type.Object(
  {
    catalogue_id: Type.String({
      description: 'The catalogue\'s identity: it changes whenever its history is cut (a restored backup). A copy made under another identity must start again from `since=0`.',
      examples: ['0f8fad5b-d9cb-469f-a165-70867728950e'],
    }),
    version: Type.Integer({ minimum: 0, description: 'The catalogue\'s version when the changes were read: ask `since=` it next time.' }),
    changes: Type.Array(Type.Ref('Change'), { description: 'Every product changed after `since`, once, in version order.' }),
    next: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'The rest of the changes up to `version`, or null: this answer holds them all.' }),
  },
  { $id: 'ChangePage', additionalProperties: false },
);

/** The create body's fields: exactly the catalogue's, which the compiler checks by `satisfies`. */
const newProductFields = {
  name: Type.String({ description: `Surrounding white space is trimmed; 1 to ${MAX_NAME_LENGTH} characters after trimming; no control characters.` }),
  barcode: Type.String({ description: 'EAN-13 as a string of 13 digits; a JSON number is refused (it would lose leading zeros).' }),
  price: Type.Union([Type.String(), Type.Number()], {
    description: `A decimal string ("12.50") or a plain JSON number (12.5); ≥ 0, at most ${PRICE_DECIMALS} decimals, at most ${PRICE_WHOLE_DIGITS} digits before the point. Exponent forms are refused.`,
  }),
} satisfies Record<(typeof PRODUCT_FIELDS)[number], TSchema>;

export const NewProductSchema = Type.Object(newProductFields, {
  $id: 'NewProduct',
  additionalProperties: false,
  examples: [{ name: 'Espresso 1 kg', barcode: '4006381333931', price: '12.99' }],
});
/** The create body as JSON gives it (the service itself reads numbers from their text). */
export type NewProductWire = Static<typeof NewProductSchema>;
