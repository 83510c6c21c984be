import type { Kysely, Selectable } from 'kysely';
import type { NewProduct, Product } from '../catalogue/product.js';
import { DuplicateBarcodeError, StoreUnavailableError } from '../catalogue/errors.js';
import type { CatalogueStore } from './store.js';
import type { Database, ProductTable } from './schema.js';

/** What differs between databases once the queries are shared: how their errors read. */
export interface DialectErrors {
  isUniqueViolation(error: unknown): boolean;
  isConnectionFailure(error: unknown): boolean;
}

/** The one implementation of `CatalogueStore`, over any database Kysely speaks to. */
export class KyselyCatalogueStore implements CatalogueStore {
  readonly #db: Kysely<Database>;
  readonly #errors: DialectErrors;

  constructor(db: Kysely<Database>, errors: DialectErrors) {
    this.#db = db;
    this.#errors = errors;
  }

  async createProduct(product: NewProduct): Promise<Product> {
    try {
      // Inserting only when the barcode is free, rather than letting the unique index refuse the row,
      // keeps a refused product from using up a pk on PostgreSQL (a sequence value is drawn before the
      // index is checked), so pks come out the same on every database. The index still decides races.
      const row = await this.#db
        .insertInto('product')
        .columns(['name', 'barcode', 'price_cents'])
        .expression(
          this.#db
            .selectNoFrom((eb) => [
              eb.cast<string>(eb.val(product.name), 'text').as('name'),
              eb.cast<string>(eb.val(product.barcode), 'text').as('barcode'),
              eb.cast<number>(eb.val(product.priceCents), 'bigint').as('price_cents'),
            ])
            .where(({ not, exists, selectFrom }) =>
              not(exists(selectFrom('product').select('pk').where('barcode', '=', product.barcode))),
            ),
        )
        .returning(['pk', 'name', 'barcode', 'price_cents'])
        .executeTakeFirst();
      if (row === undefined) throw new DuplicateBarcodeError(product.barcode);
      return toProduct(row);
    } catch (error) {
      if (error instanceof DuplicateBarcodeError) throw error;
      if (this.#errors.isUniqueViolation(error)) throw new DuplicateBarcodeError(product.barcode);
      throw this.#translate(error);
    }
  }

  async findProduct(pk: number): Promise<Product | undefined> {
    const row = await this.#run(() =>
      this.#db.selectFrom('product').select(['pk', 'name', 'barcode', 'price_cents']).where('pk', '=', pk).executeTakeFirst(),
    );
    return row === undefined ? undefined : toProduct(row);
  }

  async countProducts(): Promise<number> {
    const row = await this.#run(() =>
      this.#db.selectFrom('product').select((eb) => eb.fn.countAll<number | string | bigint>().as('count')).executeTakeFirstOrThrow(),
    );
    return Number(row.count);
  }

  async listProducts(offset: number, limit: number): Promise<Product[]> {
    const rows = await this.#run(() =>
      this.#db
        .selectFrom('product')
        .select(['pk', 'name', 'barcode', 'price_cents'])
        .orderBy('pk')
        .limit(limit)
        .offset(offset)
        .execute(),
    );
    return rows.map(toProduct);
  }

  async listProductsAfter(afterPk: number, limit: number): Promise<Product[]> {
    const rows = await this.#run(() =>
      this.#db
        .selectFrom('product')
        .select(['pk', 'name', 'barcode', 'price_cents'])
        .where('pk', '>', afterPk)
        .orderBy('pk')
        .limit(limit)
        .execute(),
    );
    return rows.map(toProduct);
  }

  async ping(): Promise<void> {
    await this.#run(() => this.#db.selectFrom('product').select('pk').limit(1).execute());
  }

  async close(): Promise<void> {
    await this.#db.destroy();
  }

  async #run<T>(query: () => Promise<T>): Promise<T> {
    try {
      return await query();
    } catch (error) {
      throw this.#translate(error);
    }
  }

  #translate(error: unknown): unknown {
    return this.#errors.isConnectionFailure(error) ? new StoreUnavailableError(error) : error;
  }
}

function toProduct(row: Pick<Selectable<ProductTable>, 'pk' | 'name' | 'barcode' | 'price_cents'>): Product {
  // PostgreSQL returns bigint columns as strings; every value here is below 2^53.
  return { pk: Number(row.pk), name: row.name, barcode: row.barcode, priceCents: Number(row.price_cents) };
}
