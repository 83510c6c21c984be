import { sql, type CompiledQuery, type Kysely, type RawBuilder } from 'kysely';
import type { NewProduct, Product } from '../catalogue/product.js';
import { DuplicateBarcodeError, IdempotencyKeyTakenError, StoreUnavailableError } from '../catalogue/errors.js';
import type { CatalogueStore, CatalogueSummary, IdempotencyRecord, KeyedCreation, PoolStats, PriceListOutcome, ProductPage } from './store.js';
import type { ChangeSignal, DialectErrors, DialectFastPaths, FilterSource, ProductRow, StateRow, StoreDialect } from './dialect.js';
import type { Database } from './schema.js';
import { foldForSearch, type ProductFilter } from '../catalogue/search.js';
import { filterSource, foldPendingNames } from './search-index.js';

/** Rows per statement when many are read or written at once; well under every database's parameter limit. */
const ROWS_PER_STATEMENT = 500;

/** Reads in pieces a search makes, each spoilt by a write, before it reads in one statement instead. */
const PIECED_ATTEMPTS = 3;

/** Resolves after the event loop has had a turn: the I/O waiting meanwhile (other requests) is served. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The one implementation of `CatalogueStore`, over any database Kysely speaks to. */
export class KyselyCatalogueStore implements CatalogueStore {
  readonly #dialect: StoreDialect;
  readonly #db: Kysely<Database>;
  readonly #errors: DialectErrors;
  readonly #fast: DialectFastPaths;
  // The reads every request makes, compiled to SQL once; each call only binds new parameters.
  readonly #findQuery: CompiledQuery<ProductRow>;
  readonly #stateQuery: CompiledQuery<StateRow>;
  readonly #pageQuery: CompiledQuery<PageRow>;
  readonly #changes: ChangeSignal | undefined;
  #generation = 0;
  /** What the change signal (or, negated, the revision) last said. */
  #lastSeen: number | undefined;
  /** The last search that reads every folded name; the next one waits for it. */
  #fullReads: Promise<unknown> = Promise.resolve();

  constructor(dialect: StoreDialect) {
    const { db } = dialect;
    this.#dialect = dialect;
    this.#db = db;
    this.#errors = dialect.errors;
    this.#fast = dialect.fastPaths ?? {};
    this.#changes = dialect.changes;
    this.#findQuery = db.selectFrom('product').select(['pk', 'name', 'barcode', 'price_cents']).where('pk', '=', 0).compile();
    this.#stateQuery = sql<StateRow>`${sql.raw(STATE_SUMS)}`.compile(db);
    this.#pageQuery = pageQuery(0, 0).compile(db);
  }

  cacheGeneration(): number | Promise<number> {
    const seen = this.#changes?.current();
    if (seen !== undefined) return this.#observe(seen);
    // Revisions are kept apart from the signal's numbers (negative), so that switching between the two
    // always counts as a change.
    return this.describeCatalogue().then(({ revision }) => this.#observe(-1 - revision));
  }

  #observe(seen: number): number {
    if (seen !== this.#lastSeen) {
      this.#lastSeen = seen;
      this.#generation += 1;
    }
    return this.#generation;
  }

  /** After every write of this store, committed or not: its own commits are not signalled to it in time. */
  #wrote(): void {
    this.#generation += 1;
  }

  async createProduct(product: NewProduct): Promise<Product> {
    try {
      return await this.#createProduct(product);
    } finally {
      this.#wrote();
    }
  }

  async #createProduct(product: NewProduct): Promise<Product> {
    try {
      const row = this.#fast.insertProduct === undefined ? await insertIfFree(this.#db, product) : await this.#fast.insertProduct(product);
      if (row === undefined) throw new DuplicateBarcodeError(product.barcode);
      return toProduct(row);
    } catch (error) {
      if (error instanceof DuplicateBarcodeError) throw error;
      if (this.#errors.isUniqueViolation(error)) throw new DuplicateBarcodeError(product.barcode);
      throw this.#translate(error);
    }
  }

  async findProduct(pk: number): Promise<Product | undefined> {
    const find = this.#fast.findProduct;
    const row = find === undefined ? (await this.#run(() => this.#db.executeQuery(withParameters(this.#findQuery, [pk])))).rows[0] : find(pk);
    return row === undefined ? undefined : toProduct(row);
  }

  async describeCatalogue(): Promise<CatalogueSummary> {
    const read = this.#fast.readState;
    const row = read === undefined ? (await this.#run(() => this.#db.executeQuery(this.#stateQuery))).rows[0] : read();
    if (row === undefined || row.product_count === null) throw new Error(MISSING_STATE);
    return { count: Number(row.product_count), revision: Number(row.revision) };
  }

  async readPage(offset: number, limit: number): Promise<ProductPage> {
    const { rows } = await this.#run(() => this.#db.executeQuery(withParameters(this.#pageQuery, [offset, offset, limit])));
    const first = rows[0];
    if (first === undefined || first.product_count === null) throw new Error(MISSING_STATE);
    const products = first.pk === null ? [] : rows.map((row) => toProduct(row as ProductRow));
    return { count: Number(first.product_count), revision: Number(first.revision), products };
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

  async readFilteredPage(filter: ProductFilter, offset: number, limit: number): Promise<ProductPage> {
    await this.foldPendingNames();
    const source = filterSource(filter, this.#dialect.search);
    return this.#search(
      source,
      async () => {
        // One statement, so that the count, the revision and the page come from one snapshot everywhere.
        const { rows } = await sql<PageRow>`
          SELECT c.match_count AS product_count, s.revision, p.pk, p.name, p.barcode, p.price_cents
          FROM (${sql.raw(STATE_SUMS)}) s
          CROSS JOIN (SELECT count(*) AS match_count FROM ${source.count}) c
          LEFT JOIN (
            SELECT product.pk, product.name, product.barcode, product.price_cents FROM ${source.from}
            WHERE ${source.where} ORDER BY ${source.order} LIMIT ${limit} OFFSET ${offset}
          ) p ON 1 = 1
          ORDER BY p.pk`.execute(this.#db);
        const first = rows[0];
        if (first === undefined || first.product_count === null) throw new Error(MISSING_STATE);
        const products = first.pk === null ? [] : rows.map((row) => toProduct(row as ProductRow));
        return { count: Number(first.product_count), revision: Number(first.revision), products };
      },
      async (revision) => {
        let count = 0;
        const products: Product[] = [];
        for await (const range of this.#pieces(source, 0)) {
          const found = await this.#countIn(source, range);
          // Rows are read only from the pieces the page falls in; the others are only counted.
          if (products.length < limit && count + found > offset) {
            const rows = await this.#rowsIn(source, range, limit - products.length, Math.max(0, offset - count));
            products.push(...rows.map(toProduct));
          }
          count += found;
        }
        return { count, revision, products };
      },
    );
  }

  async countMatching(filter: ProductFilter): Promise<number> {
    await this.foldPendingNames();
    const source = filterSource(filter, this.#dialect.search);
    return this.#search(
      source,
      async () => {
        const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${source.count}`.execute(this.#db);
        return Number(rows[0]?.n ?? 0);
      },
      async () => {
        let count = 0;
        for await (const range of this.#pieces(source, 0)) count += await this.#countIn(source, range);
        return count;
      },
    );
  }

  async listFilteredAfter(filter: ProductFilter, afterPk: number, limit: number): Promise<Product[]> {
    await this.foldPendingNames();
    const source = filterSource(filter, this.#dialect.search);
    return this.#search(
      source,
      async () => {
        const { rows } = await sql<ProductRow>`
          SELECT product.pk, product.name, product.barcode, product.price_cents FROM ${source.from}
          WHERE ${source.where} AND ${source.pk} > ${afterPk} ORDER BY ${source.order} LIMIT ${limit}`.execute(this.#db);
        return rows.map(toProduct);
      },
      async () => {
        const products: Product[] = [];
        for await (const range of this.#pieces(source, afterPk)) {
          if (products.length >= limit) break;
          products.push(...(await this.#rowsIn(source, range, limit - products.length, 0)).map(toProduct));
        }
        return products;
      },
    );
  }

  /**
   * Runs a search: `whole` in one statement, or, when it reads every folded name (texts too short for
   * a trigram) and the database reads such searches in pieces (SQLite), `inPieces`, given the revision
   * it answers for. Searches that read every folded name run one at a time per store, with a turn of
   * the event loop between them, so that many broad searches at once queue here instead of taking
   * every connection (PostgreSQL) or the one thread (SQLite) from the other requests.
   */
  async #search<T>(source: FilterSource, whole: () => Promise<T>, inPieces: (revision: number) => Promise<T>): Promise<T> {
    if (!source.readsEveryName) return this.#run(whole);
    const read = this.#dialect.search.pksPerPiece === undefined ? whole : () => this.#consistentInPieces(inPieces, whole);
    const turn = this.#fullReads.then(() => this.#run(read));
    this.#fullReads = turn.catch(() => undefined).then(nextTurn);
    return turn;
  }

  /**
   * `inPieces`, as exact as one statement: its pieces are read at different times, so it is taken only
   * when the revision (raised by every write, from any process) is the same after it as before.
   * Writes coming in between every time leave `whole`, one statement, which is one snapshot.
   */
  async #consistentInPieces<T>(inPieces: (revision: number) => Promise<T>, whole: () => Promise<T>): Promise<T> {
    for (let attempt = 0; attempt < PIECED_ATTEMPTS; attempt += 1) {
      const { revision } = await this.describeCatalogue();
      const answer = await inPieces(revision);
      if ((await this.describeCatalogue()).revision === revision) return answer;
    }
    return whole();
  }

  /**
   * The conditions selecting `source`'s matches in consecutive ranges of pks above `afterPk`, lowest
   * first, `pksPerPiece` wide, with a turn of the event loop before each but the first.
   */
  async *#pieces(source: FilterSource, afterPk: number): AsyncGenerator<RawBuilder<boolean>> {
    const width = this.#dialect.search.pksPerPiece ?? Number.MAX_SAFE_INTEGER;
    // Two subqueries, as each of min() and max() is then one index lookup.
    const { rows } = await sql<{ low: number | string | null; high: number | string | null }>`
      SELECT (SELECT min(pk) FROM product) AS low, (SELECT max(pk) FROM product) AS high`.execute(this.#db);
    const bounds = rows[0];
    if (bounds === undefined || bounds.low === null || bounds.high === null) return;
    const [first, high] = [Math.max(afterPk, Number(bounds.low) - 1), Number(bounds.high)];
    for (let above = first; above < high; above += width) {
      if (above !== first) await nextTurn();
      yield sql<boolean>`${source.where} AND ${source.pk} > ${above} AND ${source.pk} <= ${above + width}`;
    }
  }

  async #countIn(source: FilterSource, range: RawBuilder<boolean>): Promise<number> {
    const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${source.from} WHERE ${range}`.execute(this.#db);
    return Number(rows[0]?.n ?? 0);
  }

  async #rowsIn(source: FilterSource, range: RawBuilder<boolean>, limit: number, offset: number): Promise<ProductRow[]> {
    const { rows } = await sql<ProductRow>`
      SELECT product.pk, product.name, product.barcode, product.price_cents FROM ${source.from}
      WHERE ${range} ORDER BY ${source.order} LIMIT ${limit} OFFSET ${offset}`.execute(this.#db);
    return rows;
  }

  /**
   * Folds the names written without a folded copy (plain SQL) before a search reads the index; the
   * partial index on the missing copies makes this one index probe when there are none.
   */
  async foldPendingNames(): Promise<number> {
    return this.#run(() => foldPendingNames(this.#db as unknown as Kysely<unknown>, this.#dialect.search));
  }

  async findKeyedCreation(key: string, notBefore: Date): Promise<KeyedCreation | undefined> {
    const row = await this.#run(() =>
      this.#db
        .selectFrom('idempotency_key')
        .innerJoin('product', 'product.pk', 'idempotency_key.product_pk')
        .select(['idempotency_key.fingerprint', 'product.pk', 'product.name', 'product.barcode', 'product.price_cents'])
        .where('idempotency_key.key', '=', key)
        .where('idempotency_key.created_at', '>=', notBefore.getTime())
        .executeTakeFirst(),
    );
    return row === undefined ? undefined : { fingerprint: row.fingerprint, product: toProduct(row) };
  }

  async createKeyedProduct(product: NewProduct, record: IdempotencyRecord, expiredBefore: Date): Promise<Product> {
    try {
      return await this.#createKeyedProduct(product, record, expiredBefore);
    } finally {
      this.#wrote();
    }
  }

  async #createKeyedProduct(product: NewProduct, record: IdempotencyRecord, expiredBefore: Date): Promise<Product> {
    try {
      const row = await this.#db.transaction().execute(async (trx) => {
        // Writing first takes the write lock at once (SQLite), and keeps the table small.
        await trx.deleteFrom('idempotency_key').where('created_at', '<', expiredBefore.getTime()).execute();
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
      if (!this.#errors.isUniqueViolation(error)) throw this.#translate(error);
      // Otherwise a concurrent request committed the same barcode or key after the guard looked.
    }
    // Refused by the guard or by an index: the key, when recorded, tells a retry from another product.
    const winner = await this.findKeyedCreation(record.key, expiredBefore);
    if (winner !== undefined) throw new IdempotencyKeyTakenError(record.key, winner.fingerprint, winner.product);
    throw new DuplicateBarcodeError(product.barcode);
  }

  async existingBarcodes(barcodes: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < barcodes.length; start += ROWS_PER_STATEMENT) {
      const chunk = barcodes.slice(start, start + ROWS_PER_STATEMENT);
      const rows = await this.#run(() => this.#db.selectFrom('product').select('barcode').where('barcode', 'in', chunk).execute());
      for (const row of rows) found.add(row.barcode);
    }
    return found;
  }

  async insertProducts(batches: AsyncIterable<readonly NewProduct[]>): Promise<number> {
    try {
      return await this.#insertProducts(batches);
    } finally {
      this.#wrote();
    }
  }

  async #insertProducts(batches: AsyncIterable<readonly NewProduct[]>): Promise<number> {
    let chunk: readonly NewProduct[] = [];
    try {
      return await this.#db.transaction().execute(async (trx) => {
        let stored = 0;
        for await (const batch of batches) {
          for (let start = 0; start < batch.length; start += ROWS_PER_STATEMENT) {
            chunk = batch.slice(start, start + ROWS_PER_STATEMENT);
            await trx
              .insertInto('product')
              .values(chunk.map((p) => ({ name: p.name, name_folded: foldForSearch(p.name), barcode: p.barcode, price_cents: p.priceCents })))
              .execute();
            stored += chunk.length;
          }
        }
        return stored;
      });
    } catch (error) {
      if (this.#errors.isUniqueViolation(error)) throw new DuplicateBarcodeError(await this.#takenBarcode(chunk));
      throw this.#translate(error);
    }
  }

  async applyPriceList(batches: AsyncIterable<readonly NewProduct[]>): Promise<PriceListOutcome> {
    try {
      return await this.#applyPriceList(batches);
    } finally {
      this.#wrote();
    }
  }

  async #applyPriceList(batches: AsyncIterable<readonly NewProduct[]>): Promise<PriceListOutcome> {
    let chunk: readonly NewProduct[] = [];
    try {
      return await this.#db.transaction().execute(async (transaction) => {
        const trx = transaction.withTables<{ new_product: NewProductRow }>();
        let changed = 0;
        let listed = 0;
        for await (const batch of batches) {
          for (let start = 0; start < batch.length; start += ROWS_PER_STATEMENT) {
            chunk = batch.slice(start, start + ROWS_PER_STATEMENT);
            const withList = trx.with('price_list(ord, barcode, name, name_folded, price_cents)', () => priceListRows(chunk, listed));
            // The first statement writes, so it takes SQLite's write lock at once, before anything is read.
            const updated = await withList
              .updateTable('product')
              .from('price_list')
              .set((eb) => ({ name: eb.ref('price_list.name'), name_folded: eb.ref('price_list.name_folded'), price_cents: eb.ref('price_list.price_cents') }))
              .whereRef('product.barcode', '=', 'price_list.barcode')
              .where((eb) => eb.or([eb('product.name', '<>', eb.ref('price_list.name')), eb('product.price_cents', '<>', eb.ref('price_list.price_cents'))]))
              .executeTakeFirstOrThrow();
            changed += Number(updated.numUpdatedRows);
            if (listed === 0) await createNewProductTable(trx);
            await withList
              .insertInto('new_product')
              .columns(['ord', 'name', 'name_folded', 'barcode', 'price_cents'])
              .expression((eb) =>
                eb
                  .selectFrom('price_list')
                  .select(['price_list.ord', 'price_list.name', 'price_list.name_folded', 'price_list.barcode', 'price_list.price_cents'])
                  .where(({ not, exists, selectFrom }) =>
                    not(exists(selectFrom('product').select('product.pk').whereRef('product.barcode', '=', 'price_list.barcode'))),
                  ),
              )
              .execute();
            listed += chunk.length;
          }
        }
        if (listed === 0) return { added: 0, changed: 0, unchanged: 0 };
        // New products draw their pks only now, in list order, once the whole list has been read: a list
        // that fails before has drawn none (a PostgreSQL sequence is not rolled back with the
        // transaction), and listed products already stored draw none either (an upsert, ON CONFLICT,
        // would draw one for each on PostgreSQL). So pks come out the same on every database.
        const inserted = await trx
          .insertInto('product')
          .columns(['name', 'name_folded', 'barcode', 'price_cents'])
          .expression((eb) => eb.selectFrom('new_product').select(['name', 'name_folded', 'barcode', 'price_cents']).orderBy('ord'))
          .executeTakeFirstOrThrow();
        await trx.schema.dropTable('new_product').execute();
        const added = Number(inserted.numInsertedOrUpdatedRows ?? 0);
        return { added, changed, unchanged: listed - added - changed };
      });
    } catch (error) {
      if (this.#errors.isUniqueViolation(error)) throw new DuplicateBarcodeError(await this.#takenBarcode(chunk));
      throw this.#translate(error);
    }
  }

  poolStats(): PoolStats | undefined {
    return this.#dialect.poolStats?.();
  }

  async ping(): Promise<void> {
    await this.#run(() => this.#db.selectFrom('product').select('pk').limit(1).execute());
  }

  async close(): Promise<void> {
    await this.#dialect.close();
  }

  /** Which barcode of a refused chunk was taken: one already stored, or else one repeated in the chunk. */
  async #takenBarcode(chunk: readonly NewProduct[]): Promise<string> {
    const barcodes = chunk.map((p) => p.barcode);
    const [stored] = await this.existingBarcodes(barcodes);
    return stored ?? barcodes.find((b, i) => barcodes.indexOf(b) !== i) ?? barcodes[0] ?? '';
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

const MISSING_STATE = 'The catalogue_state rows are missing; run the migrations.';

/** The count and the revision: sums over the slots of `catalogue_state` (see migration 0002). */
const STATE_SUMS = 'SELECT sum(product_count) AS product_count, sum(revision) AS revision FROM catalogue_state';

/**
 * Inserts `product` unless its barcode is taken (or, given a `key`, unless that idempotency key is
 * recorded) and returns its row, or `undefined` when refused. Looking first, rather than letting the
 * unique index refuse the row, keeps a refused product from using up a pk on PostgreSQL (a sequence
 * value is drawn before the index is checked), so pks come out the same on every database. The
 * indexes still decide races.
 */
async function insertIfFree(db: Kysely<Database>, product: NewProduct, key?: string): Promise<ProductRow | undefined> {
  return db
    .insertInto('product')
    .columns(['name', 'name_folded', 'barcode', 'price_cents'])
    .expression(
      db
        .selectNoFrom((eb) => [
          eb.cast<string>(eb.val(product.name), 'text').as('name'),
          eb.cast<string>(eb.val(foldForSearch(product.name)), 'text').as('name_folded'),
          eb.cast<string>(eb.val(product.barcode), 'text').as('barcode'),
          eb.cast<number>(eb.val(product.priceCents), 'bigint').as('price_cents'),
        ])
        .where(({ and, not, exists, selectFrom }) =>
          and([
            not(exists(selectFrom('product').select('pk').where('barcode', '=', product.barcode))),
            ...(key === undefined ? [] : [not(exists(selectFrom('idempotency_key').select('key').where('key', '=', key)))]),
          ]),
        ),
    )
    .returning(['pk', 'name', 'barcode', 'price_cents'])
    .executeTakeFirst();
}

/**
 * One page with the count and revision, in one statement so that all three come from one snapshot on
 * every database. When max - min + 1 equals the count there are no gaps and the first pk is
 * min + offset; otherwise the offset walks the pk index alone. min() and max() each stay single index
 * lookups. Parameters, in order: offset, offset, limit.
 */
function pageQuery(offset: number, limit: number) {
  return sql<PageRow>`
    SELECT s.product_count, s.revision, p.pk, p.name, p.barcode, p.price_cents
    FROM (${sql.raw(STATE_SUMS)}) s
    LEFT JOIN (
      SELECT pk, name, barcode, price_cents FROM product
      WHERE pk >= CASE
        WHEN (SELECT max(pk) FROM product) - (SELECT min(pk) FROM product) + 1
             = (SELECT sum(product_count) FROM catalogue_state)
          THEN (SELECT min(pk) FROM product) + ${offset}
        ELSE (SELECT pk FROM product ORDER BY pk LIMIT 1 OFFSET ${offset})
      END
      ORDER BY pk
      LIMIT ${limit}
    ) p ON 1 = 1
    ORDER BY p.pk`;
}

/**
 * A chunk of a price list as rows of a table `(ord, barcode, name, price_cents)`, typed alike on every
 * database; `ord` is the row's place in the whole list, counted from `firstOrd`.
 */
function priceListRows(products: readonly NewProduct[], firstOrd: number) {
  const rows = products.map(
    (p, i) =>
      sql`(${sql.lit(firstOrd + i)}, cast(${p.barcode} as text), cast(${p.name} as text), cast(${foldForSearch(p.name)} as text), cast(${p.priceCents} as bigint))`,
  );
  return sql<{ ord: number; barcode: string; name: string; name_folded: string; price_cents: number }>`(values ${sql.join(rows)})`;
}

/** Products of a price list waiting to be added, by their place in the list. */
interface NewProductRow {
  ord: number;
  name: string;
  name_folded: string;
  barcode: string;
  price_cents: number;
}

/** A table of the transaction's own (dropped with it on PostgreSQL, rolled back with it on SQLite). */
async function createNewProductTable(trx: Kysely<Database & { new_product: NewProductRow }>): Promise<void> {
  await trx.schema
    .createTable('new_product')
    .temporary()
    .addColumn('ord', 'bigint', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('name_folded', 'text', (col) => col.notNull())
    .addColumn('barcode', 'text', (col) => col.notNull())
    .addColumn('price_cents', 'bigint', (col) => col.notNull())
    .execute();
}

function withParameters<R>(query: CompiledQuery<R>, parameters: readonly unknown[]): CompiledQuery<R> {
  return { ...query, parameters };
}

interface PageRow {
  product_count: number | string | bigint | null;
  revision: number | string | bigint | null;
  pk: number | string | null;
  name: string | null;
  barcode: string | null;
  price_cents: number | string | bigint | null;
}

function toProduct(row: ProductRow): Product {
  // PostgreSQL returns bigint columns as strings; every value here is below 2^53.
  return { pk: Number(row.pk), name: row.name, barcode: row.barcode, priceCents: Number(row.price_cents) };
}
