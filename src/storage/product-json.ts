import { isUtf8 } from 'node:buffer';
import { sql, type RawBuilder } from 'kysely';

/**
 * The row of `product` as the JSON the API writes for a product, built by the database:
 * `{"pk":…,"name":…,"barcode":…,"price":"12.50"}`, the price as formatPrice writes it (whole units, a
 * dot, two digits of cents). Reads that hand many products to a client as they are (a feed page, a
 * step of the whole list) take this text instead of a row object per product, which with its
 * collection costs more than the rest of the read. Held to the serializer's bytes by
 * test/storage/change-feed.test.ts and test/http/whole-list-stream.test.ts.
 */
export function productJson(jsonString: (text: RawBuilder<unknown>) => RawBuilder<string>): RawBuilder<string> {
  const cents = sql`product.price_cents`;
  const price = sql`(${cents} / 100) || '.' || CASE WHEN ${cents} % 100 < 10 THEN '0' ELSE '' END || (${cents} % 100)`;
  // As text whatever plain SQL stored (SQLite keeps a BLOB or a number in a text column as it was given), as toProduct reads it.
  return sql<string>`'{"pk":' || product.pk || ',"name":' || ${jsonString(sql`CAST(product.name AS TEXT)`)} || ',"barcode":' || ${jsonString(sql`CAST(product.barcode AS TEXT)`)} || ',"price":"' || ${price} || '"}'`;
}

/**
 * JSON the database wrote, as the service may send it. SQLite hands its text over as the bytes stored,
 * and plain SQL can store bytes that are no UTF-8 at all (`CAST(x'ff41' AS TEXT)`); those are decoded as
 * a product read decodes them, each bad sequence read as U+FFFD, so that the whole list and the change
 * feed say what `GET /api/v1/shop/product/{pk}` says, in a body that is UTF-8. The JSON's own characters
 * are ASCII, which no bad sequence takes with it.
 */
export function wellFormedJson(json: string | Uint8Array): string | Uint8Array {
  if (typeof json === 'string' || isUtf8(json)) return json;
  return Buffer.from(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8'));
}
