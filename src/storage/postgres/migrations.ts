import { sql, type Kysely, type Migration } from 'kysely';
import { MAX_PRICE_CENTS } from '../../catalogue/price.js';
import { MAX_PK } from '../../catalogue/product.js';
import type { DialectMigrations } from '../dialect.js';
import { STATE_SLOTS } from '../schema.js';
import { INDEXED_NAME, JOINED_NAME, SPACES_JOINED } from './search.js';

/** What PostgreSQL's migrations write in its own SQL; the steps are storage/migrations.ts. */
export const postgresMigrations: DialectMigrations = {
  pkType: 'bigint',
  // An identity guarantees a pk is never reused.
  primaryKey: (col) => col.primaryKey().generatedAlwaysAsIdentity(),
  // Each connection bumps its own slot, so concurrent inserts do not queue on one row lock until commit.
  catalogueState: onEveryChange('catalogue_state_bump', 'ROW', ['product_state_row', 'product_state_truncate'], `
   DECLARE
     slot integer := pg_backend_pid() % ${STATE_SLOTS};
   BEGIN
     IF TG_OP = 'INSERT' THEN
       UPDATE catalogue_state SET product_count = product_count + 1, revision = revision + 1 WHERE id = slot;
     ELSIF TG_OP = 'DELETE' THEN
       UPDATE catalogue_state SET product_count = product_count - 1, revision = revision + 1 WHERE id = slot;
     ELSIF TG_OP = 'TRUNCATE' THEN
       UPDATE catalogue_state SET product_count = 0, revision = revision + 1;
     ELSE
       UPDATE catalogue_state SET revision = revision + 1 WHERE id = slot;
     END IF;
     RETURN NULL;
   END `),
  // Every committed change to the products is announced, once per transaction (PostgreSQL folds equal
  // notices of one transaction into one, and sends them only at commit), so that each instance's
  // caches stay valid without a query per request. The channel is the schema's own (see
  // change-listener.ts): names are database-wide.
  changeNotice: onEveryChange('catalogue_change_notice', 'STATEMENT', ['product_change_notice', 'product_change_notice_truncate'], `
   BEGIN
     PERFORM pg_notify('catalogue_' || md5(TG_TABLE_SCHEMA), '');
     RETURN NULL;
   END `),
  search: {
    async up(db) {
      const trgm = await trigramSchema(db);
      await run(db, SEARCH);
      await run(db, [`CREATE INDEX product_name_folded_trgm ON product USING gin (name_folded ${quoteIdentifier(trgm)}.gin_trgm_ops)`]);
    },
    down: (db) =>
      run(db, [
        'DROP TRIGGER IF EXISTS product_name_changed ON product',
        'DROP FUNCTION IF EXISTS product_name_changed()',
        'DROP INDEX IF EXISTS product_name_folded_trgm',
      ]),
  },
  priceLimit: {
    up: (db) => run(db, [`ALTER TABLE product ADD CONSTRAINT product_price_limit CHECK (price_cents <= ${MAX_PRICE_CENTS})`]),
    down: (db) => run(db, ['ALTER TABLE product DROP CONSTRAINT IF EXISTS product_price_limit']),
  },
  changeFeed: {
    up: (db) => run(db, CHANGE_FEED),
  },
  // Nothing to write: an update that leaves every indexed value as it was writes no index entry (HOT).
  searchIndexOnChange: { up: async () => undefined, down: async () => undefined },
  searchAcrossWords: {
    up: (db) => replaceTrigramIndex(db, { name: 'product_name_folded_joined_trgm', over: SPACES_JOINED }, 'product_name_folded_trgm'),
    down: (db) => replaceTrigramIndex(db, { name: 'product_name_folded_trgm', over: 'name_folded' }, 'product_name_folded_joined_trgm'),
  },
  // As searchAcrossWords, over every character that is not a letter or a digit, not the spaces alone.
  searchAcrossSeparators: {
    up: (db) => replaceTrigramIndex(db, { name: 'product_name_folded_words_trgm', over: INDEXED_NAME }, 'product_name_folded_joined_trgm'),
    down: (db) => replaceTrigramIndex(db, { name: 'product_name_folded_joined_trgm', over: SPACES_JOINED }, 'product_name_folded_words_trgm'),
  },
  // A candidate the index hands over is checked against the indexed value itself, which, over 0013's
  // expression, meant computing it again for each: a regexp_replace per row, ten times a LIKE, most of
  // the time of a text whose trigrams many names share (`gi-`: 20,312 candidates for 380 matches,
  // 190 ms). Kept in a column, computed once as a row is written, it is read instead. The column is
  // generated, so that every writer (plain SQL, COPY, the folding of names written without a folded
  // copy) keeps it right. Adding it rewrites the table: at a million products, 55 s with the
  // table locked (docs/OPERATIONS.md).
  searchColumn: {
    async up(db) {
      const trgm = quoteIdentifier(await trigramSchema(db));
      await run(db, [
        `ALTER TABLE product ADD COLUMN ${JOINED_NAME} text GENERATED ALWAYS AS (${INDEXED_NAME}) STORED`,
        `CREATE INDEX product_name_joined_trgm ON product USING gin (${JOINED_NAME} ${trgm}.gin_trgm_ops)`,
        'DROP INDEX product_name_folded_words_trgm',
        'ANALYZE product',
      ]);
    },
    async down(db) {
      await replaceTrigramIndex(db, { name: 'product_name_folded_words_trgm', over: INDEXED_NAME }, 'product_name_joined_trgm');
      await run(db, [`ALTER TABLE product DROP COLUMN ${JOINED_NAME}`]);
    },
  },
  // The notice names its kind (TG_OP: INSERT, UPDATE, DELETE, TRUNCATE; UPDATE for a new identity),
  // so that a listener can tell a change that only added products from one that changed those it keeps.
  // Notices of one kind in one transaction are still folded into one.
  changeNoticeKind: {
    up: (db) => run(db, [changeNoticeFunction('TG_OP')]),
    down: (db) => run(db, [changeNoticeFunction("''")]),
  },
  // A new identity (no product changes with it) is announced as a change to the products is, so that
  // every instance drops the pages of the change feed it keeps.
  catalogueIdentity: {
    up: (db) => run(db, ['CREATE TRIGGER catalogue_identity_notice AFTER UPDATE OF catalogue_id ON catalogue_state FOR EACH STATEMENT EXECUTE FUNCTION catalogue_change_notice()']),
    down: (db) => run(db, ['DROP TRIGGER IF EXISTS catalogue_identity_notice ON catalogue_state']),
  },
  pkBound: {
    up: (db) => run(db, [`ALTER TABLE product ALTER COLUMN pk SET MAXVALUE ${MAX_PK}`]),
    down: (db) => run(db, ['ALTER TABLE product ALTER COLUMN pk SET NO MAXVALUE']),
  },
  // The identity's MAXVALUE binds only the pks it draws; `OVERRIDING SYSTEM VALUE` and an UPDATE go past it.
  pkRange: {
    up: (db) => run(db, [`ALTER TABLE product ADD CONSTRAINT product_pk_range CHECK (pk BETWEEN 1 AND ${MAX_PK})`]),
    down: (db) => run(db, ['ALTER TABLE product DROP CONSTRAINT IF EXISTS product_pk_range']),
  },
  // `SET pk = DEFAULT` moves a product: the statement lock is taken before it, and the pk it left is
  // a removal in the feed (its new one already had a version as a changed row).
  pkMoves: {
    up: (db) => run(db, ['DROP TRIGGER product_write_lock ON product', writeLockTrigger('pk, name, barcode, price_cents'), rowsUpdatedFunction('CREATE OR REPLACE', true)]),
    down: (db) => run(db, ['DROP TRIGGER product_write_lock ON product', writeLockTrigger('name, barcode, price_cents'), rowsUpdatedFunction('CREATE OR REPLACE', false)]),
  },
  // Kysely looks for its bookkeeping tables in every schema unless told which one; another schema's
  // tables in the same database would then pass for this one's.
  migrationTableSchema: currentSchema,
};

async function run(db: Kysely<unknown>, statements: readonly string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** 0004's notice function, saying `payload`: replaced in place, so that its triggers stay. */
function changeNoticeFunction(payload: string): string {
  return `CREATE OR REPLACE FUNCTION catalogue_change_notice() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM pg_notify('catalogue_' || md5(TG_TABLE_SCHEMA), ${payload});
     RETURN NULL;
   END $$`;
}

/**
 * A PL/pgSQL function run after every insert, update or delete on `product` (for each row or each
 * statement) and after every TRUNCATE, with its two triggers; and their removal.
 */
function onEveryChange(fn: string, each: 'ROW' | 'STATEMENT', [trigger, truncateTrigger]: readonly [string, string], body: string): Migration {
  return {
    up: (db) =>
      run(db, [
        `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$${body}$$`,
        `CREATE TRIGGER ${trigger} AFTER INSERT OR UPDATE OR DELETE ON product FOR EACH ${each} EXECUTE FUNCTION ${fn}()`,
        `CREATE TRIGGER ${truncateTrigger} AFTER TRUNCATE ON product FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
      ]),
    down: (db) => run(db, [`DROP TRIGGER IF EXISTS ${trigger} ON product`, `DROP TRIGGER IF EXISTS ${truncateTrigger} ON product`, `DROP FUNCTION IF EXISTS ${fn}()`]),
  };
}

/** The first key of the catalogue's advisory locks ("cata"); the second is its state table's oid. */
const WRITE_LOCK_NAMESPACE = 0x63617461;

/**
 * Versions in commit order, and the count and revision, with bookkeeping once per statement (from its
 * transition tables), never once per row: updating one shared row for every product row made bulk
 * writes cost the square of their rows (each update walked the row's earlier versions of the same
 * transaction). Every statement that writes products takes the catalogue's write lock first (a
 * transaction-level advisory lock, one per schema) and keeps it until its transaction ends, after the
 * commit is visible: versions are drawn only under it, so a transaction that commits later always has
 * higher versions, and a reader that has seen a version never misses a lower one. The functions keep
 * the schema they were created in (SET search_path), so that SQL run with another search_path still
 * writes this catalogue's tables.
 */
const CHANGE_FEED = [
  'DROP TRIGGER IF EXISTS product_state_row ON product',
  'DROP TRIGGER IF EXISTS product_state_truncate ON product',
  'DROP FUNCTION IF EXISTS catalogue_state_bump()',
  `CREATE FUNCTION catalogue_write_lock() RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
     SELECT pg_advisory_xact_lock(${WRITE_LOCK_NAMESPACE}, 'catalogue_state'::regclass::oid::int)
   $$`,
  `CREATE FUNCTION catalogue_statement_lock() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
   BEGIN
     PERFORM catalogue_write_lock();
     RETURN NULL;
   END $$`,
  // Before any row is written, so that a statement never holds a product's row lock while it waits
  // for the catalogue's (two writers would then wait for each other). Folding a name (name_folded) is
  // no change to the product and takes no lock.
  writeLockTrigger('name, barcode, price_cents'),
  `CREATE FUNCTION catalogue_rows_inserted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
   DECLARE
     last_version bigint;
     n bigint;
   BEGIN
     PERFORM catalogue_write_lock();
     SELECT version INTO last_version FROM catalogue_state WHERE id = 0;
     INSERT INTO catalogue_change (pk, version)
       SELECT pk, last_version + row_number() OVER (ORDER BY pk) FROM new_rows
       ON CONFLICT (pk) DO UPDATE SET version = excluded.version;
     GET DIAGNOSTICS n = ROW_COUNT;
     IF n > 0 THEN
       UPDATE catalogue_state SET product_count = product_count + n, revision = revision + 1, version = last_version + n WHERE id = 0;
     END IF;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER product_rows_inserted AFTER INSERT ON product REFERENCING NEW TABLE AS new_rows
     FOR EACH STATEMENT EXECUTE FUNCTION catalogue_rows_inserted()`,
  rowsUpdatedFunction('CREATE', false),
  `CREATE TRIGGER product_rows_updated AFTER UPDATE ON product REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
     FOR EACH STATEMENT EXECUTE FUNCTION catalogue_rows_updated()`,
  // A removed product keeps its row in catalogue_change, with the version of its removal.
  `CREATE FUNCTION catalogue_rows_deleted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
   DECLARE
     last_version bigint;
     n bigint;
   BEGIN
     PERFORM catalogue_write_lock();
     SELECT version INTO last_version FROM catalogue_state WHERE id = 0;
     INSERT INTO catalogue_change (pk, version)
       SELECT pk, last_version + row_number() OVER (ORDER BY pk) FROM old_rows
       ON CONFLICT (pk) DO UPDATE SET version = excluded.version;
     GET DIAGNOSTICS n = ROW_COUNT;
     IF n > 0 THEN
       UPDATE catalogue_state SET product_count = product_count - n, revision = revision + 1, version = last_version + n WHERE id = 0;
     END IF;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER product_rows_deleted AFTER DELETE ON product REFERENCING OLD TABLE AS old_rows
     FOR EACH STATEMENT EXECUTE FUNCTION catalogue_rows_deleted()`,
  // TRUNCATE has no transition table: every product is removed, read before it goes.
  `CREATE FUNCTION catalogue_truncating() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
   DECLARE
     last_version bigint;
     n bigint;
   BEGIN
     PERFORM catalogue_write_lock();
     SELECT version INTO last_version FROM catalogue_state WHERE id = 0;
     INSERT INTO catalogue_change (pk, version)
       SELECT pk, last_version + row_number() OVER (ORDER BY pk) FROM product
       ON CONFLICT (pk) DO UPDATE SET version = excluded.version;
     GET DIAGNOSTICS n = ROW_COUNT;
     UPDATE catalogue_state SET product_count = 0, revision = revision + 1, version = last_version + n WHERE id = 0;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER product_truncating BEFORE TRUNCATE ON product FOR EACH STATEMENT EXECUTE FUNCTION catalogue_truncating()`,
  // Its name was made by the database (0003): found, not assumed.
  `DO $$
   DECLARE
     foreign_key text;
   BEGIN
     FOR foreign_key IN SELECT conname FROM pg_constraint WHERE conrelid = 'idempotency_key'::regclass AND contype = 'f' LOOP
       EXECUTE format('ALTER TABLE idempotency_key DROP CONSTRAINT %I', foreign_key);
     END LOOP;
   END $$`,
];

/**
 * The statement lock's trigger: before an insert, a removal, or an UPDATE that names one of `columns`
 * (0007: the product's fields; 0017: its pk too, which plain SQL moves).
 */
function writeLockTrigger(columns: string): string {
  return `CREATE TRIGGER product_write_lock BEFORE INSERT OR UPDATE OF ${columns} OR DELETE OR TRUNCATE ON product
     FOR EACH STATEMENT EXECUTE FUNCTION catalogue_statement_lock()`;
}

/**
 * The versions of an UPDATE: each row whose name, barcode or price it changed (not a folded copy), and
 * since 0017 (`movedPks`) each pk a row left (`SET pk = DEFAULT`), as a removal: without it a copy kept
 * the product at its old pk beside the same one at its new pk. The changed rows are the new ones less
 * the old (EXCEPT hashes both once): a join of the two transition tables, which have no index and no
 * statistics, was planned as a nested loop, whose cost grows with the square of the rows updated.
 */
function rowsUpdatedFunction(verb: 'CREATE' | 'CREATE OR REPLACE', movedPks: boolean): string {
  const changed = 'SELECT pk, name, barcode, price_cents FROM new_rows EXCEPT SELECT pk, name, barcode, price_cents FROM old_rows';
  const changedPks = movedPks ? `SELECT pk FROM (${changed}) AS changed UNION ALL (SELECT pk FROM old_rows EXCEPT SELECT pk FROM new_rows)` : changed;
  return `${verb} FUNCTION catalogue_rows_updated() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
   DECLARE
     last_version bigint;
     n bigint;
   BEGIN
     IF NOT EXISTS (${changedPks}) THEN
       RETURN NULL;
     END IF;
     PERFORM catalogue_write_lock();
     SELECT version INTO last_version FROM catalogue_state WHERE id = 0;
     INSERT INTO catalogue_change (pk, version)
       SELECT pk, last_version + row_number() OVER (ORDER BY pk)
       FROM (${changedPks}) AS versioned
       ON CONFLICT (pk) DO UPDATE SET version = excluded.version;
     GET DIAGNOSTICS n = ROW_COUNT;
     UPDATE catalogue_state SET revision = revision + 1, version = last_version + n WHERE id = 0;
     RETURN NULL;
   END $$`;
}

const SEARCH = [
  `CREATE FUNCTION product_name_changed() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF NEW.name IS DISTINCT FROM OLD.name AND NEW.name_folded IS NOT DISTINCT FROM OLD.name_folded THEN
       NEW.name_folded := NULL;
     END IF;
     RETURN NEW;
   END $$`,
  'CREATE TRIGGER product_name_changed BEFORE UPDATE OF name ON product FOR EACH ROW EXECUTE FUNCTION product_name_changed()',
];

/** Builds the trigram index `index` over the expression `over`, then drops the index `replaced`. */
async function replaceTrigramIndex(db: Kysely<unknown>, index: { name: string; over: string }, replaced: string): Promise<void> {
  const trgm = quoteIdentifier(await trigramSchema(db));
  await run(db, [
    // Dropping the old index needs this lock, and the migration's transaction keeps every lock it
    // takes: building the new index first would hold a lock that blocks writers, then ask for this
    // one behind a writer already waiting for the first, and PostgreSQL ends one of the two as a
    // deadlock (an instance of the previous version taking writes meanwhile made every rollout fail).
    'LOCK TABLE product IN ACCESS EXCLUSIVE MODE',
    `CREATE INDEX ${index.name} ON product USING gin ((${index.over}) ${trgm}.gin_trgm_ops)`,
    `DROP INDEX ${replaced}`,
    // The planner knows how many names a pattern matches over the new expression only from its
    // statistics, which autovacuum gathers only once enough rows change: a catalogue that seldom
    // changes would be searched with the guess of a few rows for every term.
    'ANALYZE product',
  ]);
}

/**
 * The schema holding pg_trgm, created when missing. It goes to `public` when that exists, so that it
 * outlives any one catalogue's schema (dropping a schema drops the extensions created in it).
 * Creating an extension needs the CREATE privilege on the database (superuser before PostgreSQL 13).
 */
async function trigramSchema(db: Kysely<unknown>): Promise<string> {
  const find = async (): Promise<string | undefined> => {
    const { rows } = await sql<{ schema: string }>`SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`.execute(db);
    return rows[0]?.schema;
  };
  const existing = await find();
  if (existing !== undefined) return existing;
  const { rows } = await sql<{ found: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') AS found`.execute(db);
  await sql.raw(`CREATE EXTENSION IF NOT EXISTS pg_trgm${rows[0]?.found === true ? ' SCHEMA public' : ''}`).execute(db);
  const created = await find();
  if (created === undefined) throw new Error('The pg_trgm extension could not be created.');
  return created;
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The schema PostgreSQL creates unqualified tables in: the first existing one on the `search_path`. */
async function currentSchema(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (schema === undefined || schema === null) {
    throw new Error('No schema on the search_path exists; create it or set search_path to an existing one.');
  }
  return schema;
}
