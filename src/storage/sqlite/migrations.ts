import { sql, type Kysely } from 'kysely';
import { MAX_PRICE_CENTS } from '../../catalogue/price.js';
import type { DialectMigrations } from '../dialect.js';

/** What SQLite's migrations write in its own SQL; the steps are storage/migrations.ts. */
export const sqliteMigrations: DialectMigrations = {
  pkType: 'integer',
  // AUTOINCREMENT guarantees a pk is never reused.
  primaryKey: (col) => col.primaryKey().autoIncrement(),
  // SQLite has one writer at a time: slot 0 is enough.
  catalogueState: {
    up: (db) => run(db, STATE_TRIGGERS),
    down: (db) => run(db, ['product_state_insert', 'product_state_update', 'product_state_delete'].map((name) => `DROP TRIGGER IF EXISTS ${name}`)),
  },
  // Nothing to write: another process's commit shows in PRAGMA data_version.
  changeNotice: { up: async () => undefined, down: async () => undefined },
  search: {
    up: (db) => run(db, SEARCH),
    down: async (db) => {
      await run(db, ['product_search_insert', 'product_search_delete', 'product_search_update', 'product_name_changed'].map((name) => `DROP TRIGGER IF EXISTS ${name}`));
      await run(db, ['DROP TABLE IF EXISTS product_search']);
    },
  },
  // SQLite cannot add a CHECK to a table: triggers refuse the write instead. They refuse a fraction of
  // a cent too (a REAL written by plain SQL), which PostgreSQL's bigint column refuses by its type.
  priceLimit: {
    up: (db) => run(db, ['INSERT', 'UPDATE OF price_cents'].map((event, i) => `CREATE TRIGGER ${PRICE_LIMIT_TRIGGERS[i]} BEFORE ${event} ON product
      WHEN new.price_cents > ${MAX_PRICE_CENTS} OR new.price_cents <> CAST(new.price_cents AS INTEGER)
      BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: price_cents is whole cents <= ${MAX_PRICE_CENTS}'); END`)),
    down: (db) => run(db, PRICE_LIMIT_TRIGGERS.map((name) => `DROP TRIGGER IF EXISTS ${name}`)),
  },
  // One database per file: Kysely's tables are in it.
  migrationTableSchema: async () => undefined,
};

async function run(db: Kysely<unknown>, statements: readonly string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

const PRICE_LIMIT_TRIGGERS = ['product_price_limit_insert', 'product_price_limit_update'];

const STATE_TRIGGERS = [
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

// An external-content FTS5 index over name_folded (trigram: any substring of 3 characters or more).
// The folded text is already lower-case, so the tokenizer must not fold again.
const SEARCH = [
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
