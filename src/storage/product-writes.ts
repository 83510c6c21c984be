import type { Kysely } from 'kysely';
import { DuplicateBarcodeError, IdempotencyKeyTakenError, RestoreRunningError } from '../catalogue/errors.js';
import { refuseWhileRestoring } from './bulk-write-journal.js';
import type { NewProduct, Product } from '../catalogue/product.js';
import { NEW_PRODUCT_COLUMNS, newProductRow, PRODUCT_COLUMNS, toProduct, type ProductRow } from './product-row.js';
import type { Database } from './schema.js';
import type { StoreContext } from './store-context.js';
import type { IdempotencyRecord, KeyedCreation } from './store.js';

/** Creations of one product at a time, as the API makes them, with or without an idempotency key. */
export class ProductWrites {
  readonly #context: StoreContext;

  constructor(context: StoreContext) {
    this.#context = context;
  }

  async createProduct(product: NewProduct): Promise<Product> {
    const insert = this.#context.dialect.fastPaths?.insertProduct;
    try {
      const row =
        insert === undefined
          ? await this.#context.writeDb.transaction().execute(async (trx) => {
              await refuseWhileRestoring(trx);
              return insertIfFree(trx, product);
            })
          : await insert(product);
      if (row === undefined) throw new DuplicateBarcodeError(product.barcode);
      return toProduct(row);
    } catch (error) {
      if (error instanceof DuplicateBarcodeError || error instanceof RestoreRunningError) throw error;
      if (this.#context.isUniqueViolation(error)) throw new DuplicateBarcodeError(product.barcode);
      throw this.#context.translate(error);
    }
  }

  async findKeyedCreation(key: string, notBefore: Date): Promise<KeyedCreation | undefined> {
    const row = await this.#context.run(() =>
      this.#context.db
        .selectFrom('idempotency_key')
        // A product removed since leaves the record alone: the key stays used.
        .leftJoin('product', 'product.pk', 'idempotency_key.product_pk')
        .select(['idempotency_key.fingerprint', 'idempotency_key.product_pk', ...PRODUCT_COLUMNS.map((column) => `product.${column}` as const)])
        .where('idempotency_key.key', '=', key)
        .where('idempotency_key.created_at', '>=', notBefore.getTime())
        .executeTakeFirst(),
    );
    if (row === undefined) return undefined;
    const { fingerprint, product_pk, pk, name, barcode, price_cents } = row;
    const product = pk === null || name === null || barcode === null || price_cents === null ? undefined : toProduct({ pk, name, barcode, price_cents });
    return { fingerprint, pk: Number(product_pk), product };
  }

  async createKeyedProduct(product: NewProduct, record: IdempotencyRecord, expiredBefore: Date): Promise<Product> {
    try {
      const row = await this.#context.writeDb.transaction().execute(async (trx) => {
        // Writing first takes the write lock at once (SQLite), and keeps the table small.
        await trx.deleteFrom('idempotency_key').where('created_at', '<', expiredBefore.getTime()).execute();
        await refuseWhileRestoring(trx);
        const row = await insertIfFree(trx, product, record.key);
        if (row === undefined) return undefined;
        await trx
          .insertInto('idempotency_key')
          .values({ key: record.key, fingerprint: record.fingerprint, product_pk: row.pk, created_at: record.createdAt.getTime() })
          .execute();
        return row;
      });
      if (row !== undefined) return toProduct(row);
    } catch (error) {
      if (error instanceof RestoreRunningError) throw error;
      if (!this.#context.isUniqueViolation(error)) throw this.#context.translate(error);
      // Otherwise a concurrent request committed the same barcode or key after the guard looked.
    }
    // Refused by the guard or by an index: the key, when recorded, tells a retry from another product.
    const winner = await this.findKeyedCreation(record.key, expiredBefore);
    if (winner !== undefined) throw new IdempotencyKeyTakenError(record.key, winner);
    throw new DuplicateBarcodeError(product.barcode);
  }
}

/**
 * Inserts `product` unless its barcode is taken (or, given a `key`, unless that idempotency key is
 * recorded) and returns its row, or `undefined` when refused. Looking first, rather than letting the
 * unique index refuse the row, keeps a refused product from using up a pk on PostgreSQL (a sequence
 * value is drawn before the index is checked), so pks come out the same on every database. The
 * indexes still decide races.
 */
async function insertIfFree(db: Kysely<Database>, product: NewProduct, key?: string): Promise<ProductRow | undefined> {
  const row = newProductRow(product);
  return db
    .insertInto('product')
    .columns(NEW_PRODUCT_COLUMNS)
    .expression(
      db
        .selectNoFrom((eb) => [
          eb.cast<string>(eb.val(row.name), 'text').as('name'),
          eb.cast<string>(eb.val(row.name_folded), 'text').as('name_folded'),
          eb.cast<string>(eb.val(row.barcode), 'text').as('barcode'),
          eb.cast<number>(eb.val(row.price_cents), 'bigint').as('price_cents'),
        ])
        .where(({ and, not, exists, selectFrom }) =>
          and([
            not(exists(selectFrom('product').select('pk').where('barcode', '=', product.barcode))),
            ...(key === undefined ? [] : [not(exists(selectFrom('idempotency_key').select('key').where('key', '=', key)))]),
          ]),
        ),
    )
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirst();
}
