import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { StoreDialect } from './dialect.js';
import { MAX_PRICE_CENTS } from '../catalogue/price.js';
import { MAX_PK } from '../catalogue/product.js';
import { NAMED_PKS, namedPks } from '../catalogue/named-pks.js';
import { STATE_SLOTS } from './schema.js';
import { newCatalogueId } from './catalogue-state.js';

/** A row a migration cannot take, with how many such rows there are (a window count, before the limit). */
interface NamedRow {
  readonly pk: unknown;
  readonly total: unknown;
}

/** The rows of a migration that stops, named for the operator (the query reads NAMED_PKS of them). */
function namedRows(rows: readonly NamedRow[]): string {
  return namedPks(rows.map((row) => row.pk), Number(rows[0]?.total ?? rows.length));
}

/**
 * The schema's history, oldest first. Each step is written once; what a database writes in its own
 * SQL (column types, triggers, the trigram index) is its dialect's, in its folder.
 */
function migrationsFor(dialect: StoreDialect): Record<string, Migration> {
  const own = dialect.migrations;
  return {
    '0001_create_product': {
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema
          .createTable('product')
          .addColumn('pk', own.pkType, (col) => own.primaryKey(col))
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
        await own.catalogueState.up(db);
      },
      async down(db: Kysely<unknown>): Promise<void> {
        await own.catalogueState.down?.(db);
        await db.schema.dropTable('catalogue_state').execute();
      },
    },
    '0003_idempotency': {
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema
          .createTable('idempotency_key')
          .addColumn('key', 'text', (col) => col.primaryKey())
          .addColumn('fingerprint', 'text', (col) => col.notNull())
          .addColumn('product_pk', own.pkType, (col) => col.notNull().references('product.pk'))
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
      // Every committed change to the products is announced where the database needs a notice for the
      // other instances' caches to hear of it (PostgreSQL; SQLite shows it in PRAGMA data_version).
      up: (db: Kysely<unknown>) => own.changeNotice.up(db),
      down: async (db: Kysely<unknown>) => own.changeNotice.down?.(db),
    },
    '0005_product_search': {
      // A folded copy of each name (see foldForSearch) and a trigram index over it. The copy is written
      // by the store, in JavaScript, so that folding is the same on every database; a name changed by
      // any other writer (plain SQL) has its copy cleared by a trigger, and the store folds cleared
      // copies again before it searches. The partial index finds them without a scan.
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema.alterTable('product').addColumn('name_folded', 'text').execute();
        await sql.raw('CREATE INDEX product_unfolded ON product (pk) WHERE name_folded IS NULL').execute(db);
        await own.search.up(db);
        // The names already stored are folded by the service, in the background (see search-reads.ts).
      },
      async down(db: Kysely<unknown>): Promise<void> {
        await own.search.down?.(db);
        await sql.raw('DROP INDEX IF EXISTS product_unfolded').execute(db);
        await db.schema.alterTable('product').dropColumn('name_folded').execute();
      },
    },
    '0006_price_limit': {
      // The API's own cap, kept by the database against plain SQL too: beyond 2^53 cents a price
      // cannot be read back exactly. A row already past it stops the migration, named, to be fixed.
      async up(db: Kysely<unknown>): Promise<void> {
        // A fraction of a cent can only be in SQLite, written by plain SQL; the CAST changes nothing on PostgreSQL.
        const { rows } = await sql<NamedRow>`
          SELECT pk, count(*) OVER () AS total FROM product WHERE price_cents > ${sql.lit(MAX_PRICE_CENTS)} OR price_cents <> CAST(price_cents AS bigint)
          ORDER BY pk LIMIT ${sql.lit(NAMED_PKS)}`.execute(db);
        if (rows.length > 0) {
          throw new Error(
            `Products have a price_cents above ${MAX_PRICE_CENTS} or not in whole cents, which the catalogue cannot keep exactly (${namedRows(rows)}); correct them and migrate again.`,
          );
        }
        await own.priceLimit.up(db);
      },
      down: async (db: Kysely<unknown>) => own.priceLimit.down?.(db),
    },
    '0007_change_feed': {
      // Every change to a product (stored, its name, barcode or price changed, removed) gives it the
      // catalogue's next version, kept in `catalogue_change`: one row per product ever stored, whose row
      // outlives a removed product, so that a copy of the catalogue can ask what changed since a version.
      // Products already stored get versions 1..count in pk order. The state's slots become the one row
      // 0: every writer now takes the catalogue's write lock once per statement (to draw versions in
      // commit order), so one row no longer makes writers queue. Removing a product by plain SQL must
      // work, so idempotency records no longer refer to products by a foreign key.
      async up(db: Kysely<unknown>): Promise<void> {
        await atomically(db, async (trx) => {
          await trx.schema.alterTable('catalogue_state').addColumn('version', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
          await sql`UPDATE catalogue_state SET
              product_count = (SELECT sum(product_count) FROM catalogue_state),
              revision = (SELECT sum(revision) FROM catalogue_state)
            WHERE id = 0`.execute(trx);
          await sql`DELETE FROM catalogue_state WHERE id <> 0`.execute(trx);
          await trx.schema
            .createTable('catalogue_change')
            .addColumn('pk', own.pkType, (col) => col.primaryKey())
            .addColumn('version', 'bigint', (col) => col.notNull().unique())
            .execute();
          await sql`INSERT INTO catalogue_change (pk, version) SELECT pk, row_number() OVER (ORDER BY pk) FROM product`.execute(trx);
          await sql`UPDATE catalogue_state SET version = (SELECT count(*) FROM catalogue_change) WHERE id = 0`.execute(trx);
          await own.changeFeed.up(trx);
        });
      },
    },
    '0008_bulk_write_journal': {
      // A bulk write (an import, a price list, a removal) runs as a series of short transactions, so
      // that no write waits long for the lock it holds; each step journals in its own transaction how
      // to undo it, so that a bulk write that fails or is interrupted (its process killed) is undone by
      // whoever finds it: itself, the next bulk write, or a running service (see bulk-write-journal.ts).
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema
          .createTable('bulk_write')
          .addColumn('id', own.pkType, (col) => own.primaryKey(col))
          .addColumn('kind', 'text', (col) => col.notNull())
          .addColumn('owner', 'text', (col) => col.notNull())
          .addColumn('state', 'text', (col) => col.notNull())
          .addColumn('started_at', 'bigint', (col) => col.notNull())
          .addColumn('heartbeat_at', 'bigint', (col) => col.notNull())
          .execute();
        await db.schema
          .createTable('bulk_undo')
          .addColumn('id', own.pkType, (col) => own.primaryKey(col))
          .addColumn('write_id', own.pkType, (col) => col.notNull())
          .addColumn('action', 'text', (col) => col.notNull())
          .addColumn('pk_from', own.pkType, (col) => col.notNull())
          .addColumn('pk_to', own.pkType, (col) => col.notNull())
          .addColumn('name', 'text')
          .addColumn('name_folded', 'text')
          .addColumn('barcode', 'text')
          .addColumn('price_cents', 'bigint')
          .execute();
        await db.schema.createIndex('bulk_undo_write').on('bulk_undo').columns(['write_id', 'id']).execute();
      },
      async down(db: Kysely<unknown>): Promise<void> {
        await db.schema.dropTable('bulk_undo').execute();
        await db.schema.dropTable('bulk_write').execute();
      },
    },
    '0009_search_index_on_change': {
      // A write that leaves a folded name as it was (a price list changing prices) no longer rewrites
      // the name's entry in the trigram index, where the database would otherwise do so.
      up: (db: Kysely<unknown>) => own.searchIndexOnChange.up(db),
      down: async (db: Kysely<unknown>) => own.searchIndexOnChange.down?.(db),
    },
    '0010_search_across_words': {
      // The trigram index narrows a search for text across words (`a 0`, `e gour`) as well, where the
      // database's index took its trigrams word by word (PostgreSQL) and such a search read nearly
      // every name.
      up: (db: Kysely<unknown>) => own.searchAcrossWords.up(db),
      down: async (db: Kysely<unknown>) => own.searchAcrossWords.down?.(db),
    },
    '0011_catalogue_identity': {
      // The catalogue's identity, carried by the change feed beside the versions: a restore cuts the
      // history (versions go back, or start again in another database), and a copy kept in step with
      // the history before must start again, which it knows by the identity changing. Renewed by every
      // restore (catalogue restore, catalogue new-identity after a restore of the database itself).
      async up(db: Kysely<unknown>): Promise<void> {
        await db.schema.alterTable('catalogue_state').addColumn('catalogue_id', 'text').execute();
        await sql`UPDATE catalogue_state SET catalogue_id = ${newCatalogueId()} WHERE id = 0`.execute(db);
        await own.catalogueIdentity.up(db);
      },
      async down(db: Kysely<unknown>): Promise<void> {
        await own.catalogueIdentity.down?.(db);
        await db.schema.alterTable('catalogue_state').dropColumn('catalogue_id').execute();
      },
    },
    '0012_pk_bound': {
      // A pk is a JSON number, which JavaScript (every browser, the till) reads exactly only up to
      // 2^53 - 1: a create past it is refused rather than answered with a pk its client cannot read back.
      up: (db) => own.pkBound.up(db),
      down: async (db) => own.pkBound.down?.(db),
    },
    '0013_search_across_separators': {
      // The trigram index narrows a search across a hyphen, a comma or any other character that is not a
      // letter or a digit (`kx-4821`, `0,33 l`) as 0010's did across spaces: PostgreSQL's index took
      // such a search as short pieces (`kx`, `4821`) that many names hold.
      up: (db) => own.searchAcrossSeparators.up(db),
      down: async (db) => own.searchAcrossSeparators.down?.(db),
    },
    '0014_change_notice_kind': {
      // The notice of a change says whether it only added products, so that the products an instance
      // keeps are kept while products are created: a create changes none of them.
      up: (db) => own.changeNoticeKind.up(db),
      down: async (db) => own.changeNoticeKind.down?.(db),
    },
    '0015_pk_range': {
      // 0012 bound the pks the database draws; plain SQL could still give one (`OVERRIDING SYSTEM VALUE`,
      // an UPDATE of pk) that no client reads back exactly, or below 1, which the lists, read after pk 0,
      // never reach. A row already outside stops the migration, named, to be fixed.
      async up(db: Kysely<unknown>): Promise<void> {
        // As text: a pk past 2^53 read as a number would be named as another.
        const { rows } = await sql<NamedRow>`
          SELECT CAST(pk AS TEXT) AS pk, count(*) OVER () AS total FROM product WHERE pk < 1 OR pk > ${sql.lit(MAX_PK)}
          ORDER BY product.pk LIMIT ${sql.lit(NAMED_PKS)}`.execute(db);
        if (rows.length > 0) {
          throw new Error(`Products have a pk below 1 or above ${MAX_PK}, which no client reads back exactly (${namedRows(rows)}); give them pks in that range and migrate again.`);
        }
        await own.pkRange.up(db);
      },
      down: async (db: Kysely<unknown>) => own.pkRange.down?.(db),
    },
    '0016_search_column': {
      // A search checks each candidate the trigram index finds against a column instead of computing
      // the indexed expression again for it: on PostgreSQL, most of the time of a term whose trigrams many names hold.
      up: (db) => own.searchColumn.up(db),
      down: async (db) => own.searchColumn.down?.(db),
    },
    '0017_pk_moves': {
      // A pk changed by plain SQL was told to the feed only as the product at its new pk (PostgreSQL),
      // or not at all (SQLite's `SET rowid`): a copy kept the product at its old pk too. On SQLite a
      // search no longer found it either.
      up: (db) => own.pkMoves.up(db),
      down: async (db) => own.pkMoves.down?.(db),
    },
  };
}

/**
 * Runs `steps` in one transaction. PostgreSQL's migrations already run in one (Kysely wraps them);
 * SQLite's do not, and a step failing halfway would leave a schema no version knows.
 */
async function atomically(db: Kysely<unknown>, steps: (trx: Kysely<unknown>) => Promise<void>): Promise<void> {
  if (db.isTransaction) await steps(db);
  else await db.transaction().execute(steps);
}

class InCodeMigrations implements MigrationProvider {
  readonly #dialect: StoreDialect;

  constructor(dialect: StoreDialect) {
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
export async function migrateToLatest(dialect: StoreDialect): Promise<string[]> {
  const { error, results } = await (await migratorFor(dialect)).migrateToLatest();
  if (error !== undefined) {
    // Kysely calls a migration it does not know "corrupted"; the usual cause is a newer version.
    const unknown = await unknownMigrations(dialect).catch(() => []);
    if (unknown.length > 0) throw new SchemaNewerError(unknown);
    throw error;
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Brings the database's schema up to the migration named `last` and no further, as an earlier version
 * of the service would have left it: for upgrade tests.
 *
 * @throws the migration's error.
 */
export async function migrateUpTo(dialect: StoreDialect, last: string): Promise<void> {
  const { error } = await (await migratorFor(dialect)).migrateTo(last);
  if (error !== undefined) throw error;
}

/**
 * Checks, without changing anything, that every migration of this version has run.
 *
 * @throws SchemaNotCurrentError naming the migrations that have not.
 */
export async function assertSchemaCurrent(dialect: StoreDialect): Promise<void> {
  const migrations = await (await migratorFor(dialect)).getMigrations();
  const pending = migrations.filter((migration) => migration.executedAt === undefined).map((migration) => migration.name);
  if (pending.length > 0) throw new SchemaNotCurrentError(pending);
}

/** Migrations the database records as run that this version does not have. */
async function unknownMigrations(dialect: StoreDialect): Promise<string[]> {
  const db = untyped(dialect);
  const schema = await dialect.migrations.migrationTableSchema(db);
  const table = schema === undefined ? DEFAULT_MIGRATION_TABLE : `${schema}.${DEFAULT_MIGRATION_TABLE}`;
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(table)} order by name`.execute(db);
  const known = migrationsFor(dialect);
  return rows.map((row) => row.name).filter((name) => !Object.hasOwn(known, name));
}

async function migratorFor(dialect: StoreDialect): Promise<Migrator> {
  const db = untyped(dialect);
  return new Migrator({ db, provider: new InCodeMigrations(dialect), migrationTableSchema: await dialect.migrations.migrationTableSchema(db) });
}

/** Migrations write (over the writing connection), over tables the schema's types do not describe yet. */
function untyped(dialect: StoreDialect): Kysely<unknown> {
  return dialect.writeDb as unknown as Kysely<unknown>;
}
