import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DialectKind } from './schema.js';
import { foldPendingNames } from './search-index.js';

/**
 * The schema's history, oldest first. Each step is written once and adapts only the column
 * types that differ between databases.
 */
function migrationsFor(dialect: DialectKind): Record<string, Migration> {
  return {
    '0001_create_product': {
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema
          .createTable('product')
          .addColumn('pk', dialect === 'sqlite' ? 'integer' : 'bigint', (col) =>
            // AUTOINCREMENT on SQLite and an identity on PostgreSQL both guarantee a pk is never reused.
            dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedAlwaysAsIdentity(),
          )
          .addColumn('name', 'text', (col) => col.notNull())
          .addColumn('barcode', 'text', (col) => col.notNull().unique())
          .addColumn('price_cents', 'bigint', (col) => col.notNull().check(sql`price_cents >= 0`))
          .execute();
      },
      async down(db: Kysely<unknown>): Promise<void> {
        await db.schema.dropTable('product').execute();
      },
    },
    '0002_catalogue_state': {
      // The count and a revision kept by the database itself, so that `count` never scans the table and
      // every instance sharing the database sees a write change the revision (caches, ETags). They are
      // the sums over a few slots: on PostgreSQL each connection bumps its own slot, so concurrent
      // inserts do not queue on one row lock until commit. Every write raises one slot's revision, so
      // the sum rises with every write.
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema
          .createTable('catalogue_state')
          .addColumn('id', 'integer', (col) => col.primaryKey().check(sql`id >= 0 AND id < ${sql.lit(STATE_SLOTS)}`))
          .addColumn('product_count', 'bigint', (col) => col.notNull())
          .addColumn('revision', 'bigint', (col) => col.notNull())
          .execute();
        await sql`INSERT INTO catalogue_state (id, product_count, revision) SELECT 0, COUNT(*), 0 FROM product`.execute(db);
        for (let slot = 1; slot < STATE_SLOTS; slot++) {
          await sql`INSERT INTO catalogue_state (id, product_count, revision) VALUES (${sql.lit(slot)}, 0, 0)`.execute(db);
        }
        for (const statement of dialect === 'sqlite' ? SQLITE_STATE_TRIGGERS : POSTGRES_STATE_TRIGGERS) {
          await sql.raw(statement).execute(db);
        }
      },
      async down(db: Kysely<unknown>): Promise<void> {
        if (dialect === 'sqlite') {
          for (const name of ['product_state_insert', 'product_state_update', 'product_state_delete']) {
            await sql.raw(`DROP TRIGGER IF EXISTS ${name}`).execute(db);
          }
        } else {
          await sql.raw('DROP TRIGGER IF EXISTS product_state_row ON product').execute(db);
          await sql.raw('DROP TRIGGER IF EXISTS product_state_truncate ON product').execute(db);
          await sql.raw('DROP FUNCTION IF EXISTS catalogue_state_bump()').execute(db);
        }
        await db.schema.dropTable('catalogue_state').execute();
      },
    },
    '0003_idempotency': {
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema
          .createTable('idempotency_key')
          .addColumn('key', 'text', (col) => col.primaryKey())
          .addColumn('fingerprint', 'text', (col) => col.notNull())
          .addColumn('product_pk', dialect === 'sqlite' ? 'integer' : 'bigint', (col) => col.notNull().references('product.pk'))
          .addColumn('created_at', 'bigint', (col) => col.notNull())
          .execute();
        // Expired keys are deleted by age.
        await db.schema.createIndex('idempotency_key_created_at').on('idempotency_key').column('created_at').execute();
      },
      async down(db: Kysely<unknown>): Promise<void> {
        await db.schema.dropTable('idempotency_key').execute();
      },
    },
    '0004_change_notice': {
      // Every committed change to the products is announced, once per transaction (PostgreSQL folds
      // equal notices of one transaction into one, and sends them only at commit), so that each
      // instance's caches stay valid without a query per request. SQLite needs nothing: another
      // process's commit shows in PRAGMA data_version.
      async up(db: Kysely<unknown>): Promise<void> {
        if (dialect !== 'postgres') return;
        for (const statement of POSTGRES_NOTICE_TRIGGERS) await sql.raw(statement).execute(db);
      },
      async down(db: Kysely<unknown>): Promise<void> {
        if (dialect !== 'postgres') return;
        await sql.raw('DROP TRIGGER IF EXISTS product_change_notice ON product').execute(db);
        await sql.raw('DROP TRIGGER IF EXISTS product_change_notice_truncate ON product').execute(db);
        await sql.raw('DROP FUNCTION IF EXISTS catalogue_change_notice()').execute(db);
      },
    },
    '0005_product_search': {
      // A folded copy of each name (see foldForSearch) and a trigram index over it. The copy is written
      // by the store, in JavaScript, so that folding is the same on every database; a name changed by
      // any other writer (plain SQL) has its copy cleared by a trigger, and the store folds cleared
      // copies again before it searches. The partial index finds them without a scan.
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema.alterTable('product').addColumn('name_folded', 'text').execute();
        await sql.raw('CREATE INDEX product_unfolded ON product (pk) WHERE name_folded IS NULL').execute(db);
        if (dialect === 'sqlite') {
          for (const statement of SQLITE_SEARCH) await sql.raw(statement).execute(db);
        } else {
          const trgm = await trigramSchema(db);
          for (const statement of POSTGRES_SEARCH) await sql.raw(statement).execute(db);
          await sql.raw(`CREATE INDEX product_name_folded_trgm ON product USING gin (name_folded ${quoteIdentifier(trgm)}.gin_trgm_ops)`).execute(db);
        }
        await foldPendingNames(db, dialect);
      },
      async down(db: Kysely<unknown>): Promise<void> {
        if (dialect === 'sqlite') {
          for (const name of ['product_search_insert', 'product_search_delete', 'product_search_update', 'product_name_changed']) {
            await sql.raw(`DROP TRIGGER IF EXISTS ${name}`).execute(db);
          }
          await sql.raw('DROP TABLE IF EXISTS product_search').execute(db);
        } else {
          await sql.raw('DROP TRIGGER IF EXISTS product_name_changed ON product').execute(db);
          await sql.raw('DROP FUNCTION IF EXISTS product_name_changed()').execute(db);
          await sql.raw('DROP INDEX IF EXISTS product_name_folded_trgm').execute(db);
        }
        await sql.raw('DROP INDEX IF EXISTS product_unfolded').execute(db);
        await db.schema.alterTable('product').dropColumn('name_folded').execute();
      },
    },
  };
}

// The channel is the schema's own (see storage/postgres/change-listener.ts): names are database-wide.
const POSTGRES_NOTICE_TRIGGERS = [
  `CREATE FUNCTION catalogue_change_notice() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM pg_notify('catalogue_' || md5(TG_TABLE_SCHEMA), '');
     RETURN NULL;
   END $$`,
  'CREATE TRIGGER product_change_notice AFTER INSERT OR UPDATE OR DELETE ON product FOR EACH STATEMENT EXECUTE FUNCTION catalogue_change_notice()',
  'CREATE TRIGGER product_change_notice_truncate AFTER TRUNCATE ON product FOR EACH STATEMENT EXECUTE FUNCTION catalogue_change_notice()',
];

/** Rows of `catalogue_state` whose sums are the count and the revision. */
const STATE_SLOTS = 16;

// SQLite has one writer at a time: slot 0 is enough.
const SQLITE_STATE_TRIGGERS = [
  `CREATE TRIGGER product_state_insert AFTER INSERT ON product BEGIN
     UPDATE catalogue_state SET product_count = product_count + 1, revision = revision + 1 WHERE id = 0;
   END`,
  `CREATE TRIGGER product_state_update AFTER UPDATE ON product BEGIN
     UPDATE catalogue_state SET revision = revision + 1 WHERE id = 0;
   END`,
  `CREATE TRIGGER product_state_delete AFTER DELETE ON product BEGIN
     UPDATE catalogue_state SET product_count = product_count - 1, revision = revision + 1 WHERE id = 0;
   END`,
];

const POSTGRES_STATE_TRIGGERS = [
  `CREATE FUNCTION catalogue_state_bump() RETURNS trigger LANGUAGE plpgsql AS $$
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
   END $$`,
  'CREATE TRIGGER product_state_row AFTER INSERT OR UPDATE OR DELETE ON product FOR EACH ROW EXECUTE FUNCTION catalogue_state_bump()',
  'CREATE TRIGGER product_state_truncate AFTER TRUNCATE ON product FOR EACH STATEMENT EXECUTE FUNCTION catalogue_state_bump()',
];

// An external-content FTS5 index over name_folded (trigram: any substring of 3 characters or more).
// The folded text is already lower-case, so the tokenizer must not fold again.
const SQLITE_SEARCH = [
  `CREATE VIRTUAL TABLE product_search USING fts5(name_folded, content='product', content_rowid='pk', tokenize='trigram case_sensitive 1')`,
  `CREATE TRIGGER product_search_insert AFTER INSERT ON product WHEN new.name_folded IS NOT NULL BEGIN
     INSERT INTO product_search (rowid, name_folded) VALUES (new.pk, new.name_folded);
   END`,
  `CREATE TRIGGER product_search_delete AFTER DELETE ON product WHEN old.name_folded IS NOT NULL BEGIN
     INSERT INTO product_search (product_search, rowid, name_folded) VALUES ('delete', old.pk, old.name_folded);
   END`,
  `CREATE TRIGGER product_search_update AFTER UPDATE OF name_folded ON product BEGIN
     INSERT INTO product_search (product_search, rowid, name_folded) SELECT 'delete', old.pk, old.name_folded WHERE old.name_folded IS NOT NULL;
     INSERT INTO product_search (rowid, name_folded) SELECT new.pk, new.name_folded WHERE new.name_folded IS NOT NULL;
   END`,
  // A name changed without its folded copy (plain SQL): clear the copy, so the store folds it again.
  `CREATE TRIGGER product_name_changed AFTER UPDATE OF name ON product
     WHEN new.name IS NOT old.name AND new.name_folded IS old.name_folded AND new.name_folded IS NOT NULL BEGIN
     UPDATE product SET name_folded = NULL WHERE pk = new.pk;
   END`,
];

const POSTGRES_SEARCH = [
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

class InCodeMigrations implements MigrationProvider {
  readonly #dialect: DialectKind;

  constructor(dialect: DialectKind) {
    this.#dialect = dialect;
  }

  async getMigrations(): Promise<Record<string, Migration>> {
    return migrationsFor(this.#dialect);
  }
}

/** The database's schema is behind this version's, and the service was told not to migrate it. */
export class SchemaNotCurrentError extends Error {
  /** The migrations this version has that the database has not run, oldest first. */
  readonly pending: readonly string[];

  constructor(pending: readonly string[]) {
    super(`The database schema is not current: ${pending.join(', ')} ${pending.length === 1 ? 'has' : 'have'} not run.`);
    this.name = 'SchemaNotCurrentError';
    this.pending = pending;
  }
}

/** The database was migrated by a newer version of the service, which this one cannot serve safely. */
export class SchemaNewerError extends Error {
  /** The migrations the database has run that this version does not know. */
  readonly unknown: readonly string[];

  constructor(unknown: readonly string[]) {
    super(
      `The database was migrated by a newer version of the catalogue (${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} unknown to this version); run that version or a later one.`,
    );
    this.name = 'SchemaNewerError';
    this.unknown = unknown;
  }
}

/**
 * Brings the database's schema up to date.
 *
 * @returns the names of the migrations that ran now (empty when it was already current).
 * @throws SchemaNewerError when the database has run migrations this version does not know; otherwise
 *   the migration's error, the failed step rolled back where the database allows it.
 */
export async function migrateToLatest(db: Kysely<unknown>, dialect: DialectKind): Promise<string[]> {
  const { error, results } = await (await migratorFor(db, dialect)).migrateToLatest();
  if (error !== undefined) {
    // Kysely calls a migration it does not know "corrupted"; the usual cause is a newer version.
    const unknown = await unknownMigrations(db, dialect).catch(() => []);
    if (unknown.length > 0) throw new SchemaNewerError(unknown);
    throw error;
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Checks, without changing anything, that every migration of this version has run.
 *
 * @throws SchemaNotCurrentError naming the migrations that have not.
 */
export async function assertSchemaCurrent(db: Kysely<unknown>, dialect: DialectKind): Promise<void> {
  const migrations = await (await migratorFor(db, dialect)).getMigrations();
  const pending = migrations.filter((migration) => migration.executedAt === undefined).map((migration) => migration.name);
  if (pending.length > 0) throw new SchemaNotCurrentError(pending);
}

/** Migrations the database records as run that this version does not have. */
async function unknownMigrations(db: Kysely<unknown>, dialect: DialectKind): Promise<string[]> {
  const table = dialect === 'postgres' ? `${await currentSchema(db)}.${DEFAULT_MIGRATION_TABLE}` : DEFAULT_MIGRATION_TABLE;
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(table)} order by name`.execute(db);
  const known = migrationsFor(dialect);
  return rows.map((row) => row.name).filter((name) => !Object.hasOwn(known, name));
}

async function migratorFor(db: Kysely<unknown>, dialect: DialectKind): Promise<Migrator> {
  return new Migrator({
    db,
    provider: new InCodeMigrations(dialect),
    // Kysely looks for its bookkeeping tables in every schema unless told which one; another schema's
    // tables in the same database would then pass for this one's.
    migrationTableSchema: dialect === 'postgres' ? await currentSchema(db) : undefined,
  });
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
