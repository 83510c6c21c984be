import { sql, type Kysely, type Migration } from 'kysely';
import { MAX_PRICE_CENTS } from '../../catalogue/price.js';
import type { DialectMigrations } from '../dialect.js';
import { STATE_SLOTS } from '../schema.js';

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
  // Kysely looks for its bookkeeping tables in every schema unless told which one; another schema's
  // tables in the same database would then pass for this one's.
  migrationTableSchema: currentSchema,
};

async function run(db: Kysely<unknown>, statements: readonly string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
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
