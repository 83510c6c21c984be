import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DialectKind } from './schema.js';

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
  };
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

/**
 * Brings the database's schema up to date.
 *
 * @returns the names of the migrations that ran now (empty when it was already current).
 * @throws the migration's error; the failed step is rolled back where the database allows it.
 */
export async function migrateToLatest(db: Kysely<unknown>, dialect: DialectKind): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: new InCodeMigrations(dialect),
    // Kysely looks for its bookkeeping tables in every schema unless told which one; another schema's
    // tables in the same database would then pass for this one's.
    migrationTableSchema: dialect === 'postgres' ? await currentSchema(db) : undefined,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
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
