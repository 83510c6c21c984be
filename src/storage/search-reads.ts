import { sql, type Kysely, type RawBuilder } from 'kysely';
import { isDatabaseShut, SearchCatchingUpError } from '../catalogue/errors.js';
import type { Product } from '../catalogue/product.js';
import type { ProductFilter } from '../catalogue/search.js';
import type { FilterSource } from './dialect.js';
import { STATE_ROW } from './catalogue-state.js';
import { pageOf, type PageRow } from './product-reads.js';
import { NameSample } from './name-sample.js';
import { PRODUCT_SELECT, toProduct, type ProductRow } from './product-row.js';
import { countPendingNames, filterSource, FOLD_BATCH, foldNameBatch } from './search-index.js';
import { giveUpWaiting, type StoreContext } from './store-context.js';
import type { ProductPage } from './store.js';
import { nextTurn, Turns } from '../turns.js';

/**
 * A page of `source`'s matches read by walking the products in pk order (`source.walk`) until the
 * page is read and `countAtMost` matches are counted, whichever is further: about
 * max(countAtMost, offset + limit) / share rows for a text that `share` of the names hold. Rows `p`
 * beside the state row `s` and the walk's count `c`, which can pass `countAtMost` (cut by the caller).
 */
function walkedPage(source: FilterSource & { walk: NonNullable<FilterSource['walk']> }, offset: number, limit: number, countAtMost: number): RawBuilder<PageRow> {
  return sql<PageRow>`
    WITH m AS MATERIALIZED (
      SELECT ${PRODUCT_SELECT} FROM ${source.from}
      WHERE ${source.walk.where} ORDER BY ${source.walk.order} LIMIT ${Math.max(countAtMost, offset + limit)}
    )
    SELECT c.match_count AS product_count, s.revision, p.pk, p.name, p.barcode, p.price_cents
    FROM (${sql.raw(STATE_ROW)}) s
    CROSS JOIN (SELECT count(*) AS match_count FROM m) c
    LEFT JOIN (SELECT * FROM m ORDER BY pk LIMIT ${limit} OFFSET ${offset}) p ON 1 = 1
    ORDER BY p.pk`;
}

/**
 * A page of `source`'s matches with their count up to `countAtMost`, counted through the index and
 * stopped there (from the cheaper `source.count` where the matches cannot be walked). Where they can be
 * walked and the count reached the bound, they are many, and the page is read by walking the products
 * in pk order, which stops at the page's end; otherwise the page is sorted from the matches counted
 * (where they cannot be walked, read through the index again and sorted). The branch not taken is not run.
 */
function countedPage(source: FilterSource, offset: number, limit: number, countAtMost: number): RawBuilder<PageRow> {
  const counted = sql`CROSS JOIN (SELECT count(*) AS match_count FROM (SELECT 1 AS found FROM ${source.count} LIMIT ${countAtMost}) f) c`;
  const state = sql`SELECT c.match_count AS product_count, s.revision, p.pk, p.name, p.barcode, p.price_cents FROM (${sql.raw(STATE_ROW)}) s`;
  if (source.walk === undefined) {
    return sql<PageRow>`
      ${state} ${counted}
      LEFT JOIN (
        SELECT ${PRODUCT_SELECT} FROM ${source.from}
        WHERE ${source.where} ORDER BY ${source.order} LIMIT ${limit} OFFSET ${offset}
      ) p ON 1 = 1
      ORDER BY p.pk`;
  }
  // The matches counted are kept, not only counted: where they are all of them, the page is sorted from
  // them, where a second read through the index would read its posting lists again (half of a rare
  // text's time).
  const many = sql<boolean>`c.match_count >= ${countAtMost}`;
  return sql<PageRow>`
    WITH f AS MATERIALIZED (SELECT ${PRODUCT_SELECT} FROM ${source.from} WHERE ${source.where} LIMIT ${countAtMost})
    ${state} CROSS JOIN (SELECT count(*) AS match_count FROM f) c
    LEFT JOIN LATERAL (
      (SELECT ${PRODUCT_SELECT} FROM ${source.from}
       WHERE ${many} AND ${source.walk.where} ORDER BY ${source.walk.order} LIMIT ${limit} OFFSET ${offset})
      UNION ALL
      (SELECT f.pk, f.name, f.barcode, f.price_cents FROM f WHERE NOT ${many} ORDER BY f.pk LIMIT ${limit} OFFSET ${offset})
    ) p ON true
    ORDER BY p.pk`;
}

/** Reads in pieces a search makes, each spoilt by a write, before it reads in one statement instead. */
const PIECED_ATTEMPTS = 3;

/**
 * The reads of products matching a filter (a barcode, a search text): from the barcode and trigram
 * indexes, or, for a text too short for a trigram, by reading the folded names.
 */
export class SearchReads {
  readonly #context: StoreContext;
  readonly #revision: () => Promise<number>;
  /** The searches that read every folded name, one at a time (given up while the database does not answer: see `Turns`). */
  readonly #fullReads: Turns;
  /** Where the dialect tells dense texts from sparse ones by a sample of the names: the sample. */
  readonly #sample: NameSample | undefined;
  /** The background folding of names written without their folded copy, while it runs. */
  #folder: Promise<void> | undefined;
  #closed = false;

  /** `revision` reads the catalogue's revision, which every write raises. */
  constructor(context: StoreContext, revision: () => Promise<number>) {
    this.#context = context;
    this.#revision = revision;
    this.#fullReads = new Turns(giveUpWaiting(context.dialect, 'a search'), isDatabaseShut);
    const dense = context.dialect.search.denseTexts;
    this.#sample = dense === undefined ? undefined : new NameSample(context, dense);
  }

  async readFilteredPage(filter: ProductFilter, offset: number, limit: number, countAtMost: number): Promise<ProductPage> {
    const source = await this.#sourceOf(filter);
    const page = await this.#search(
      source,
      async () => {
        // One statement, so that the count, the revision and the page come from one snapshot everywhere.
        if (await this.#walked(source, filter)) return pageOf(await this.#rows(walkedPage({ ...source, walk: source.walk! }, offset, limit, countAtMost), filter, true));
        return pageOf(await this.#rows(countedPage(source, offset, limit, countAtMost), filter, false));
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
          // Counted to the bound, with the page read: the pieces after it would change neither.
          if (count >= Math.max(countAtMost, offset + limit)) break;
        }
        return { count, revision, products };
      },
    );
    return { ...page, count: Math.min(page.count, countAtMost) };
  }

  async countMatching(filter: ProductFilter): Promise<number> {
    const source = await this.#sourceOf(filter);
    return this.#search(
      source,
      async () => {
        const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${source.count}`.execute(this.#context.db);
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
    const source = await this.#sourceOf(filter);
    return this.#search(
      source,
      async () => {
        // Where the matches are many, walked in pk order by the walk's own condition, which no index
        // serves, so that the database stops at `limit` matches: sorted from an index, every batch of a
        // long list read and sorted every match after `afterPk` (the v1 list of `e` at a million: 69 s on
        // PostgreSQL; of `milch`, 116,347 products, 123 s against 2.0 s walked; docs/PERFORMANCE.md).
        // Where they are few, the index finds them and they are sorted (walked, a text 670 names hold
        // took 2.9 s a batch).
        const walked = await this.#walked(source, filter);
        const { where, order } = walked ? source.walk! : source;
        const rows = await this.#rows(
          sql<ProductRow>`
            SELECT ${PRODUCT_SELECT} FROM ${source.from}
            WHERE ${where} AND ${source.pk} > ${afterPk} ORDER BY ${order} LIMIT ${limit}`,
          filter,
          walked,
        );
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
   * Folds, in the background, every name written without a folded copy (plain SQL, a bulk load), a
   * batch per transaction, until none is left; at most one such run at a time.
   */
  foldInBackground(): void {
    this.#folder ??= (async () => {
      try {
        while (!this.#closed && (await this.#foldBatch()) === FOLD_BATCH) await nextTurn();
      } catch {
        // The database went away, or the store closed: the next search starts the folding again.
      } finally {
        this.#folder = undefined;
      }
    })();
  }

  /** Lets a background folding finish its batch and stops it. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#folder;
  }

  #foldBatch(): Promise<number> {
    return this.#context.run(() => foldNameBatch(this.#context.writeDb as unknown as Kysely<unknown>, this.#context.dialect.search), 'folding names for search');
  }

  /**
   * Makes sure no name lacks its folded copy before a search reads, so that every answer is exact: a
   * few missing ones (plain SQL changed some names) are folded at once, in one batch; more (a bulk
   * load) are left to the background folding, and the search is refused until it is done.
   *
   * @throws SearchCatchingUpError while more than a batch of names is left to fold.
   */
  async #ensureFolded(): Promise<void> {
    const db = this.#context.db as unknown as Kysely<unknown>;
    const pending = await this.#context.run(() => countPendingNames(db, this.#context.dialect.search, FOLD_BATCH + 1));
    if (pending === 0) return;
    if (pending <= FOLD_BATCH) {
      // The background folding, when it runs, is at its last batch: waiting for it is as short.
      if (this.#folder !== undefined) await this.#folder;
      else await this.#foldBatch();
      return;
    }
    this.foldInBackground();
    throw new SearchCatchingUpError(pending);
  }

  /**
   * Whether `source`'s matches are read by walking the products in pk order: those of a text too short
   * for a trigram, and of one the sample of names says many hold (where the dialect keeps one).
   */
  async #walked(source: FilterSource, filter: ProductFilter): Promise<boolean> {
    return source.walk !== undefined && (source.readsEveryName || (await this.#isDense(filter)));
  }

  /**
   * The rows of a statement reading `filter`'s matches: through the trigram index where it finds a text
   * not `walked` and the dialect says so (a barcode alone has an index the planner never passes over).
   */
  async #rows<R>(statement: RawBuilder<R>, filter: ProductFilter, walked: boolean): Promise<R[]> {
    const dense = this.#context.dialect.search.denseTexts;
    if (walked || dense === undefined || filter.search === undefined) return (await statement.execute(this.#context.db)).rows;
    return dense.readThroughIndex(this.#context.db, statement);
  }

  /** Whether the sample of names says that `filter`'s text is in many names: its page is then walked. */
  async #isDense(filter: ProductFilter): Promise<boolean> {
    return filter.search !== undefined && this.#sample !== undefined && (await this.#sample.isDense(filter.search));
  }

  async #sourceOf(filter: ProductFilter): Promise<FilterSource> {
    // A barcode alone is found by its own index; the folded names play no part.
    if (filter.search !== undefined) await this.#ensureFolded();
    return filterSource(filter, this.#context.dialect.search);
  }

  /**
   * Runs a search: `whole` in one statement, or, when it reads every folded name (texts too short for
   * a trigram) and the database reads such searches in pieces (SQLite), `inPieces`, given the revision
   * it answers for. Searches that read every folded name take turns (one at a time per store).
   */
  async #search<T>(source: FilterSource, whole: () => Promise<T>, inPieces: (revision: number) => Promise<T>): Promise<T> {
    const run = <R>(read: () => Promise<R>) => this.#context.run(read);
    if (!source.readsEveryName) return run(whole);
    const read = this.#context.dialect.search.pksPerPiece === undefined ? whole : () => this.#consistentInPieces(inPieces, whole);
    return this.#fullReads.run(() => run(read));
  }

  /**
   * `inPieces`, as exact as one statement: its pieces are read at different times, so it is taken only
   * when the revision (raised by every write, from any process) is the same after it as before.
   * Writes coming in between every time leave `whole`, one statement, which is one snapshot.
   */
  async #consistentInPieces<T>(inPieces: (revision: number) => Promise<T>, whole: () => Promise<T>): Promise<T> {
    for (let attempt = 0; attempt < PIECED_ATTEMPTS; attempt += 1) {
      const revision = await this.#revision();
      const answer = await inPieces(revision);
      if ((await this.#revision()) === revision) return answer;
    }
    return whole();
  }

  /**
   * The conditions selecting `source`'s matches in consecutive ranges of pks above `afterPk`, lowest
   * first, `pksPerPiece` wide, with a turn of the event loop before each but the first.
   */
  async *#pieces(source: FilterSource, afterPk: number): AsyncGenerator<RawBuilder<boolean>> {
    const width = this.#context.dialect.search.pksPerPiece ?? Number.MAX_SAFE_INTEGER;
    // Two subqueries, as each of min() and max() is then one index lookup.
    const { rows } = await sql<{ low: number | string | null; high: number | string | null }>`
      SELECT (SELECT min(pk) FROM product) AS low, (SELECT max(pk) FROM product) AS high`.execute(this.#context.db);
    const bounds = rows[0];
    if (bounds === undefined || bounds.low === null || bounds.high === null) return;
    const [first, high] = [Math.max(afterPk, Number(bounds.low) - 1), Number(bounds.high)];
    for (let above = first; above < high; above += width) {
      if (above !== first) await nextTurn();
      yield sql<boolean>`${source.where} AND ${source.pk} > ${above} AND ${source.pk} <= ${above + width}`;
    }
  }

  async #countIn(source: FilterSource, range: RawBuilder<boolean>): Promise<number> {
    const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${source.from} WHERE ${range}`.execute(this.#context.db);
    return Number(rows[0]?.n ?? 0);
  }

  async #rowsIn(source: FilterSource, range: RawBuilder<boolean>, limit: number, offset: number): Promise<ProductRow[]> {
    const { rows } = await sql<ProductRow>`
      SELECT ${PRODUCT_SELECT} FROM ${source.from}
      WHERE ${range} ORDER BY ${source.order} LIMIT ${limit} OFFSET ${offset}`.execute(this.#context.db);
    return rows;
  }
}
