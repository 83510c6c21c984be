import { sql, type Kysely } from 'kysely';
import { MAX_PRICE_CENTS } from '../../catalogue/price.js';
import { MAX_PK } from '../../catalogue/product.js';
import type { DialectMigrations } from '../dialect.js';

/** What the trigger of migration 0012 says when a pk would pass MAX_PK; the store knows the error by it. */
export const PK_BOUND_MESSAGE = `pk_bound: no pk is left up to ${MAX_PK}`;

/** What the triggers of migration 0015 say of a pk outside 1..MAX_PK (PostgreSQL names its constraint). */
const PK_RANGE_MESSAGE = `CHECK constraint failed: product_pk_range: a pk is a whole number from 1 to ${MAX_PK}`;

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
  changeFeed: {
    up: (db) => run(db, CHANGE_FEED),
  },
  // UPDATE OF fires whenever the column is SET, even to its own value: a price list sets every
  // listed row's name_folded, and rewriting a name's trigrams in FTS5 costs more the larger the
  // index (the common trigrams' lists are rewritten), so that price lists grew quadratic.
  searchIndexOnChange: {
    up: (db) => run(db, ['DROP TRIGGER product_search_update', searchUpdateTrigger(SEARCH_INDEX_ON_CHANGE)]),
    down: (db) => run(db, ['DROP TRIGGER product_search_update', searchUpdateTrigger('')]),
  },
  // FTS5's trigram index has always taken its trigrams across words, and across any other character.
  searchAcrossWords: { up: async () => undefined, down: async () => undefined },
  searchAcrossSeparators: { up: async () => undefined, down: async () => undefined },
  // FTS5 keeps its trigrams apart from the table: nothing is computed again for a candidate.
  searchColumn: { up: async () => undefined, down: async () => undefined },
  // Nothing to write: a new identity is a commit, which shows in PRAGMA data_version.
  catalogueIdentity: { up: async () => undefined, down: async () => undefined },
  changeNoticeKind: { up: async () => undefined, down: async () => undefined },
  // AFTER: in a BEFORE trigger a pk AUTOINCREMENT is still to draw reads -1.
  pkBound: {
    up: (db) => run(db, [`CREATE TRIGGER product_pk_bound AFTER INSERT ON product WHEN new.pk > ${MAX_PK}
      BEGIN SELECT RAISE(ABORT, '${PK_BOUND_MESSAGE}'); END`]),
    down: (db) => run(db, ['DROP TRIGGER IF EXISTS product_pk_bound']),
  },
  // 0012's trigger binds inserts above MAX_PK; these bind a pk below 1 given to an insert, and any pk an
  // UPDATE sets. AFTER INSERT, as 0012's: before it, a pk still to draw reads -1. On every UPDATE, not
  // UPDATE OF pk: pk is the rowid, which `SET rowid = …` (or `_rowid_`, `oid`) changes without naming pk.
  pkRange: {
    up: (db) =>
      run(db, [
        `CREATE TRIGGER product_pk_range_insert AFTER INSERT ON product WHEN new.pk < 1
          BEGIN SELECT RAISE(ABORT, '${PK_RANGE_MESSAGE}'); END`,
        `CREATE TRIGGER product_pk_range_update BEFORE UPDATE ON product WHEN new.pk < 1 OR new.pk > ${MAX_PK}
          BEGIN SELECT RAISE(ABORT, '${PK_RANGE_MESSAGE}'); END`,
      ]),
    down: (db) => run(db, ['DROP TRIGGER IF EXISTS product_pk_range_insert', 'DROP TRIGGER IF EXISTS product_pk_range_update']),
  },
  pkMoves: {
    up: (db) => run(db, [...pkMoveTriggers(false), REINDEX_AFTER_MOVES]),
    down: (db) => run(db, pkMoveTriggers(true)),
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
  searchUpdateTrigger(''),
  // A name changed without its folded copy (plain SQL): clear the copy, so the store folds it again.
  `CREATE TRIGGER product_name_changed AFTER UPDATE OF name ON product
     WHEN new.name IS NOT old.name AND new.name_folded IS old.name_folded AND new.name_folded IS NOT NULL BEGIN
     UPDATE product SET name_folded = NULL WHERE pk = new.pk;
   END`,
];

/** 0009: a folded name rewritten in the trigram index only when it changed. */
const SEARCH_INDEX_ON_CHANGE = 'WHEN new.name_folded IS NOT old.name_folded';

/**
 * The trigger keeping a name's entry in the trigram index when its folded copy is set (`UPDATE OF
 * name_folded`), or (0017) on any UPDATE `when` a row's folded copy or pk changed: the entry is under
 * the pk, which `SET rowid` changes without naming any column.
 */
function searchUpdateTrigger(when: string, event = 'UPDATE OF name_folded'): string {
  return `CREATE TRIGGER product_search_update AFTER ${event} ON product ${when} BEGIN
     INSERT INTO product_search (product_search, rowid, name_folded) SELECT 'delete', old.pk, old.name_folded WHERE old.name_folded IS NOT NULL;
     INSERT INTO product_search (rowid, name_folded) SELECT new.pk, new.name_folded WHERE new.name_folded IS NOT NULL;
   END`;
}

/** A change's version: the state's, raised just before by the same trigger. */
const NEXT_VERSION = '(SELECT version FROM catalogue_state WHERE id = 0)';

/** Records `pk`'s change with the version just drawn; a removed product's row stays, with its removal's version. */
const recordChange = (pk: string) =>
  `INSERT INTO catalogue_change (pk, version) VALUES (${pk}, ${NEXT_VERSION}) ON CONFLICT (pk) DO UPDATE SET version = excluded.version;`;

/**
 * The versions of an update: of the product at its pk when its name, barcode, price or pk changed, and
 * of its old pk, as a removal, when plain SQL moved it. Made on `changed` and `moved` (0007: UPDATE OF
 * the columns), since 0017 on every UPDATE: `SET rowid` (or `_rowid_`, `oid`) changes the pk without
 * naming it. The pk's trigger is made last so that it fires first: the removal takes the lower version.
 */
function pkUpdateTriggers(changed: string, moved: string): string[] {
  return [
    `CREATE TRIGGER product_version_update AFTER ${changed} ON product
       WHEN new.pk IS NOT old.pk OR new.name IS NOT old.name OR new.barcode IS NOT old.barcode OR new.price_cents IS NOT old.price_cents BEGIN
       UPDATE catalogue_state SET version = version + 1 WHERE id = 0;
       ${recordChange('new.pk')}
     END`,
    `CREATE TRIGGER product_pk_update AFTER ${moved} ON product WHEN new.pk IS NOT old.pk BEGIN
       UPDATE catalogue_state SET version = version + 1 WHERE id = 0;
       ${recordChange('old.pk')}
     END`,
  ];
}

/** 0017: the triggers of a moved pk, made again (`pkUpdateTriggers`, `searchUpdateTrigger`) to fire on every UPDATE or, `back`, as before. */
function pkMoveTriggers(back: boolean): string[] {
  return [
    ...['product_version_update', 'product_pk_update', 'product_search_update'].map((name) => `DROP TRIGGER ${name}`),
    ...(back ? pkUpdateTriggers('UPDATE OF pk, name, barcode, price_cents', 'UPDATE OF pk') : pkUpdateTriggers('UPDATE', 'UPDATE')),
    back ? searchUpdateTrigger(SEARCH_INDEX_ON_CHANGE) : searchUpdateTrigger(`${SEARCH_INDEX_ON_CHANGE} OR new.pk IS NOT old.pk`, 'UPDATE'),
  ];
}

/**
 * A pk moved before 0017 left its name's entry in the trigram index under the old pk, where no product
 * is, and none under the new one: the index is built again from the table then, and only then. Each
 * entry has a row in FTS5's `_docsize` table, by pk, so that both checks are joins on integer keys (well
 * about 0.6 s at a million products); the rebuild reads every name (about 5.5 s at a million, measured).
 */
const REINDEX_AFTER_MOVES = `INSERT INTO product_search (product_search) SELECT 'rebuild'
  WHERE EXISTS (SELECT 1 FROM product_search_docsize entry WHERE NOT EXISTS (SELECT 1 FROM product WHERE product.pk = entry.id))
     OR EXISTS (SELECT 1 FROM product WHERE name_folded IS NOT NULL AND NOT EXISTS (SELECT 1 FROM product_search_docsize entry WHERE entry.id = product.pk))`;

/**
 * 0002's triggers again, now also drawing versions. SQLite has one writer at a time, so versions
 * drawn row by row come out in commit order. Every update still raises the revision (a folded copy
 * written too, which changes what a search finds); only a changed name, barcode or price (or pk) is a
 * change with a version. The idempotency records are copied into a table without the foreign key.
 */
const CHANGE_FEED = [
  ...['product_state_insert', 'product_state_update', 'product_state_delete'].map((name) => `DROP TRIGGER IF EXISTS ${name}`),
  `CREATE TRIGGER product_state_insert AFTER INSERT ON product BEGIN
     UPDATE catalogue_state SET product_count = product_count + 1, revision = revision + 1, version = version + 1 WHERE id = 0;
     ${recordChange('new.pk')}
   END`,
  `CREATE TRIGGER product_state_update AFTER UPDATE ON product BEGIN
     UPDATE catalogue_state SET revision = revision + 1 WHERE id = 0;
   END`,
  ...pkUpdateTriggers('UPDATE OF pk, name, barcode, price_cents', 'UPDATE OF pk'),
  `CREATE TRIGGER product_state_delete AFTER DELETE ON product BEGIN
     UPDATE catalogue_state SET product_count = product_count - 1, revision = revision + 1, version = version + 1 WHERE id = 0;
     ${recordChange('old.pk')}
   END`,
  `CREATE TABLE idempotency_key_unlinked (key text PRIMARY KEY, fingerprint text NOT NULL, product_pk integer NOT NULL, created_at bigint NOT NULL)`,
  `INSERT INTO idempotency_key_unlinked (key, fingerprint, product_pk, created_at) SELECT key, fingerprint, product_pk, created_at FROM idempotency_key`,
  'DROP TABLE idempotency_key',
  'ALTER TABLE idempotency_key_unlinked RENAME TO idempotency_key',
  'CREATE INDEX idempotency_key_created_at ON idempotency_key (created_at)',
];
