import { sql, type RawBuilder } from 'kysely';
import { CATALOGUE_ID } from './catalogue-state.js';
import { productJson, wellFormedJson } from './product-json.js';
import { toProduct, type ProductRow } from './product-row.js';
import { MISSING_STATE, type StoreContext } from './store-context.js';
import type { StoreDialect } from './dialect.js';
import type { Change, ChangePage, ChangePageJson } from './store.js';
import { readsTextRows, readTextRow, textOf } from './text-row.js';

/** The change feed's reads: the products changed after a version, in version order. */
export class ChangeReads {
  readonly #context: StoreContext;

  constructor(context: StoreContext) {
    this.#context = context;
  }

  /**
   * Each read is one statement, so that the changes and the catalogue's version come from one
   * snapshot. One row more than asked tells whether more follow. A product gone since (no row in
   * `product`) is a removal.
   */
  async readChanges(since: number, limit: number): Promise<ChangePage> {
    // The changes in the order of the version index, each row with the version beside it: no sort and
    // no copy of the page in the database, which a full sync of a million products would pay 100 times.
    const { rows } = await this.#context.run(() =>
      sql<ChangeRow>`
        SELECT (SELECT version FROM catalogue_state WHERE id = 0) AS head, ${sql.raw(CATALOGUE_ID)} AS catalogue,
          catalogue_change.version, catalogue_change.pk, product.name, product.barcode, product.price_cents
        FROM ${changesAfter(since === 0, since)}
        ORDER BY catalogue_change.version
        LIMIT ${limit + 1}`.execute(this.#context.db),
    );
    const first = rows[0];
    if (first === undefined) return this.#readWhenNoChanges(since, limit);
    if (first.head === null) throw new Error(MISSING_STATE);
    return { catalogue: String(first.catalogue), version: Number(first.head), changes: rows.slice(0, limit).map(toChange), more: rows.length > limit };
  }

  /**
   * The catalogue's version when the read above found no change (so no row carried the version): read
   * with a look for changes again, in one statement, because a change committed in between would
   * otherwise lie below the version answered and be skipped by a client that resumes from it. When
   * there is one now, the page is read again.
   */
  async #readWhenNoChanges(since: number, limit: number): Promise<ChangePage> {
    const { rows } = await this.#context.run(() =>
      sql<{ head: number | string | bigint; catalogue: string; changed: number | boolean }>`
        SELECT version AS head, catalogue_id AS catalogue, EXISTS (SELECT 1 FROM ${changesAfter(since === 0, since)}) AS changed
        FROM catalogue_state WHERE id = 0`.execute(this.#context.db),
    );
    const row = rows[0];
    if (row === undefined) throw new Error(MISSING_STATE);
    if (Boolean(row.changed)) return this.readChanges(since, limit);
    return { catalogue: String(row.catalogue), version: Number(row.head), changes: [], more: false };
  }

  /** The page `readChanges` reads, as JSON the database wrote (`jsonPageQuery`). */
  async readChangesJson(since: number, limit: number): Promise<ChangePageJson> {
    const row = readsTextRows(this.#context) ? await this.#readJsonPageAsText(since, limit) : await this.#readJsonPage(since, limit);
    if (row === undefined || row.head === null) throw new Error(MISSING_STATE);
    return {
      catalogue: String(row.catalogue),
      version: Number(row.head),
      changesJson: wellFormedJson(row.changes),
      lastVersion: row.last === null ? undefined : Number(row.last),
      more: Number(row.more) === 1,
    };
  }

  async #readJsonPage(since: number, limit: number): Promise<JsonPageRow | undefined> {
    const { rows } = await this.#context.run(() => jsonPageQuery(this.#context.dialect, since === 0, since, limit).execute(this.#context.db));
    return rows[0];
  }

  /** The same row read as text (PostgreSQL: by COPY), the changes' JSON as bytes that never were a string. */
  async #readJsonPageAsText(since: number, limit: number): Promise<JsonPageRow | undefined> {
    const statement = jsonPageQuery(this.#context.dialect, since === 0, sql.lit(Math.trunc(since)), sql.lit(Math.trunc(limit)));
    const row = await readTextRow(this.#context, statement, ['head', 'catalogue', 'changes', 'last', 'more']);
    return row && { head: textOf(row.head), catalogue: textOf(row.catalogue), changes: row.changes ?? new Uint8Array(), last: textOf(row.last), more: Number(textOf(row.more)) };
  }
}

/**
 * The page `readChanges` reads, with each change written as JSON by the database and joined in version
 * order, so that no row object is made per change: for a page of 10,000 (a till's whole copy) those
 * objects and their collection cost more than the list pays per product. One statement, one snapshot:
 * the catalogue's version, the changes and whether more follow (1 or 0) agree, even on an empty page.
 */
function jsonPageQuery(dialect: StoreDialect, wholeCopy: boolean, since: number | RawBuilder<number>, limit: number | RawBuilder<number>): RawBuilder<JsonPageRow> {
  return sql<JsonPageRow>`
    SELECT (SELECT version FROM catalogue_state WHERE id = 0) AS head, ${sql.raw(CATALOGUE_ID)} AS catalogue, page.changes, page.last,
      CASE WHEN EXISTS (SELECT 1 FROM ${changesAfter(wholeCopy, sql`page.last`)}) THEN 1 ELSE 0 END AS more
    FROM (
      SELECT ${dialect.textAsBytes(sql`'[' || coalesce(${dialect.joinInOrder(sql`changed.json`, sql`changed.version`)}, '') || ']'`)} AS changes,
        max(changed.version) AS last
      FROM (
        SELECT catalogue_change.version, ${changeJson(dialect.jsonString)} AS json
        FROM ${changesAfter(wholeCopy, since)}
        ORDER BY catalogue_change.version
        LIMIT ${limit}
      ) AS changed
    ) AS page`;
}

/**
 * A change as JSON, in the feed's `Change` form (src/http/contract/schemas.ts; test/storage/change-feed.test.ts
 * holds the two to the same values): `{"version":…,"pk":…,"product":{…}}`, `"product":null` for a removal.
 */
function changeJson(jsonString: (text: RawBuilder<unknown>) => RawBuilder<string>): RawBuilder<string> {
  return sql<string>`'{"version":' || catalogue_change.version || ',"pk":' || catalogue_change.pk || ',"product":' || CASE WHEN product.pk IS NULL THEN 'null' ELSE ${productJson(jsonString)} END || '}'`;
}

/**
 * The changes after `after` with their products; a removal has none. A whole copy (a read from
 * `since` 0) has nothing to remove, so removals are left out of it.
 */
function changesAfter(wholeCopy: boolean, after: number | RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`catalogue_change ${wholeCopy ? sql`JOIN` : sql`LEFT JOIN`} product ON product.pk = catalogue_change.pk
        WHERE catalogue_change.version > ${after}`;
}

interface JsonPageRow {
  head: number | string | bigint | null;
  catalogue: string | null;
  /** The changes as a JSON array. */
  changes: string | Uint8Array;
  last: number | string | bigint | null;
  /** 1 when more changes follow the page, else 0. */
  more: number | string;
}

interface ChangeRow {
  head: number | string | bigint | null;
  catalogue: string | null;
  version: number | string | bigint | null;
  pk: number | string | bigint | null;
  name: string | null;
  barcode: string | null;
  price_cents: number | string | bigint | null;
}

function toChange(row: ChangeRow): Change {
  const pk = Number(row.pk);
  // The row has the product's columns: no copy of it per change (a page holds up to 10,000).
  return { version: Number(row.version), pk, product: row.name === null ? undefined : toProduct(row as ProductRow) };
}
