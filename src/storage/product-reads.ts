import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import type { Product } from '../catalogue/product.js';
import { isDatabaseShut } from '../catalogue/errors.js';
import type { DialectFastPaths, StateRow, StoreDialect } from './dialect.js';
import { PRODUCT_COLUMNS, toProduct, type ProductRow } from './product-row.js';
import { giveUpWaiting, MISSING_STATE, type StoreContext } from './store-context.js';
import { stateOf, STATE_ROW } from './catalogue-state.js';
import { productJson, wellFormedJson } from './product-json.js';
import { Turns } from '../turns.js';
import { readsTextRows, readTextRow, textOf } from './text-row.js';
import type { CatalogueState, ProductPage, ProductsJson } from './store.js';

/**
 * The plain reads of products and of the catalogue's state. The reads every request makes are
 * compiled to SQL once; each call only binds new parameters.
 */
export class ProductReads {
  readonly #context: StoreContext;
  readonly #fast: DialectFastPaths;
  readonly #findQuery: CompiledQuery<ProductRow>;
  readonly #stateQuery: CompiledQuery<StateRow>;
  readonly #pageQuery: CompiledQuery<PageRow>;
  readonly #jsonStepQuery: CompiledQuery<JsonStepRow>;
  /**
   * The steps of whole lists, one at a time per store: eight lists at once on PostgreSQL otherwise keep
   * eight backends writing JSON on a 2-core machine, and a product read waits for a core behind them.
   * While the database does not answer, every list waiting is cut after the query time limit, not the
   * tenth after ten of them.
   */
  readonly #listSteps: Turns;

  constructor(context: StoreContext) {
    const { db } = context;
    this.#context = context;
    this.#fast = context.dialect.fastPaths ?? {};
    this.#listSteps = new Turns(giveUpWaiting(context.dialect, 'a step of the list'), isDatabaseShut);
    this.#findQuery = db.selectFrom('product').select(PRODUCT_COLUMNS).where('pk', '=', 0).compile();
    this.#stateQuery = sql<StateRow>`${sql.raw(STATE_ROW)}`.compile(db);
    this.#pageQuery = pageQuery(0, 0).compile(db);
    this.#jsonStepQuery = jsonStepQuery(context.dialect, 0, 0).compile(db);
  }

  async findProduct(pk: number): Promise<Product | undefined> {
    const find = this.#fast.findProduct;
    const row = find === undefined ? (await this.#execute(withParameters(this.#findQuery, [pk]))).rows[0] : find(pk);
    return row === undefined ? undefined : toProduct(row);
  }

  async describeCatalogue(): Promise<CatalogueState> {
    const read = this.#fast.readState;
    return stateOf(read === undefined ? (await this.#execute(this.#stateQuery)).rows[0] : read());
  }

  async readPage(offset: number, limit: number): Promise<ProductPage> {
    const { rows } = await this.#execute(withParameters(this.#pageQuery, [offset, offset, limit]));
    return pageOf(rows);
  }

  async listProductsAfter(afterPk: number, limit: number): Promise<Product[]> {
    const rows = await this.#context.run(() =>
      this.#context.db.selectFrom('product').select(PRODUCT_COLUMNS).where('pk', '>', afterPk).orderBy('pk').limit(limit).execute(),
    );
    return rows.map(toProduct);
  }

  async listProductsJsonAfter(afterPk: number, limit: number): Promise<ProductsJson> {
    const row = await this.#listSteps.run(() => this.#readJsonStep(afterPk, limit));
    const count = Number(row?.products ?? 0);
    return { json: wellFormedJson(row?.json ?? ''), count, lastPk: count === 0 ? undefined : Number(row?.last) };
  }

  async ping(): Promise<void> {
    await this.#context.run(() => this.#context.db.selectFrom('product').select('pk').limit(1).execute());
  }

  async #readJsonStep(afterPk: number, limit: number): Promise<JsonStepRow | undefined> {
    if (!readsTextRows(this.#context)) return (await this.#execute(withParameters(this.#jsonStepQuery, [afterPk, limit]))).rows[0];
    const step = jsonStepQuery(this.#context.dialect, sql.lit(Math.trunc(afterPk)), sql.lit(Math.trunc(limit)));
    const row = await readTextRow(this.#context, step, ['json', 'products', 'last']);
    return row && { json: row.json ?? new Uint8Array(), products: textOf(row.products) ?? 0, last: textOf(row.last) };
  }

  #execute<R>(query: CompiledQuery<R>) {
    return this.#context.run(() => this.#context.db.executeQuery(query));
  }
}

/** A row of a page read in one statement: the state's sums on every row, a product's columns or nulls. */
export interface PageRow {
  product_count: number | string | bigint | null;
  revision: number | string | bigint | null;
  pk: number | string | null;
  name: string | null;
  barcode: string | null;
  price_cents: number | string | bigint | null;
}

/** The page that rows of a one-statement page read hold (a single row of nulls: no products). */
export function pageOf(rows: readonly PageRow[]): ProductPage {
  const first = rows[0];
  if (first === undefined || first.product_count === null) throw new Error(MISSING_STATE);
  const products = first.pk === null ? [] : rows.map((row) => toProduct(row as ProductRow));
  return { count: Number(first.product_count), revision: Number(first.revision), products };
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
    FROM (${sql.raw(STATE_ROW)}) s
    LEFT JOIN (
      SELECT pk, name, barcode, price_cents FROM product
      WHERE pk >= CASE
        WHEN (SELECT max(pk) FROM product) - (SELECT min(pk) FROM product) + 1
             = (SELECT product_count FROM catalogue_state WHERE id = 0)
          THEN (SELECT min(pk) FROM product) + ${offset}
        ELSE (SELECT pk FROM product ORDER BY pk LIMIT 1 OFFSET ${offset})
      END
      ORDER BY pk
      LIMIT ${limit}
    ) p ON 1 = 1
    ORDER BY p.pk`;
}

interface JsonStepRow {
  json: string | Uint8Array;
  products: number | string | bigint;
  last: number | string | bigint | null;
}

/**
 * Up to `limit` products after `afterPk` in pk order as one text of their JSON joined by commas, with
 * how many and the last pk. Parameters, in order: afterPk, limit (or both written into the SQL).
 */
function jsonStepQuery(dialect: StoreDialect, afterPk: number | RawBuilder<number>, limit: number | RawBuilder<number>) {
  return sql<JsonStepRow>`
    SELECT ${dialect.textAsBytes(sql`coalesce(${dialect.joinInOrder(sql`step.json`, sql`step.pk`)}, '')`)} AS json,
      count(*) AS products, max(step.pk) AS last
    FROM (
      SELECT product.pk, ${productJson(dialect.jsonString)} AS json FROM product
      WHERE product.pk > ${afterPk}
      ORDER BY product.pk
      LIMIT ${limit}
    ) AS step`;
}

function withParameters<R>(query: CompiledQuery<R>, parameters: readonly unknown[]): CompiledQuery<R> {
  return { ...query, parameters };
}
