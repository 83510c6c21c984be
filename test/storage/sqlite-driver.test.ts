import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '../../src/storage/sqlite/dialect.js';
import { openSqliteConnection, sqliteDriverName, type SqliteConnection } from '../../src/storage/sqlite/driver.js';

/** Runs `use` on a fresh connection to `path` and closes it whatever happens. */
function withConnection(path: string, use: (db: SqliteConnection) => void): void {
  const db = openSqliteConnection(path);
  try {
    use(db);
  } finally {
    db.close();
  }
}

const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
// Node's own module has all the service needs from 22.16; Node 24 aborts in better-sqlite3 12.
const expected = major > 22 || (major === 22 && minor >= 16) ? 'node:sqlite' : 'better-sqlite3';

describe(`SQLite on Node ${process.versions.node} (${sqliteDriverName()})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-driver-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(`uses ${expected}`, () => {
    assert.equal(sqliteDriverName(), expected);
  });

  it('opens the service database with WAL and synchronous = FULL', async () => {
    const path = join(dir, 'pragmas.db');
    const dialect = openSqlite(path);
    try {
      await dialect.db.selectNoFrom((eb) => eb.val(1).as('one')).execute();
    } finally {
      await dialect.close();
    }
    withConnection(path, (check) => {
      assert.deepEqual({ ...(check.prepare('PRAGMA journal_mode').get() as object) }, { journal_mode: 'wal' });
      check.exec('PRAGMA synchronous = FULL');
      assert.deepEqual({ ...(check.prepare('PRAGMA synchronous').get() as object) }, { synchronous: 2 });
    });
  });

  it('has FTS5 with the trigram tokenizer', () => {
    withConnection(':memory:', (db) => {
      db.exec("CREATE VIRTUAL TABLE names USING fts5(name, tokenize = 'trigram')");
      const insert = db.prepare<[string]>('INSERT INTO names (name) VALUES (?)');
      for (const name of ['Espresso beans 1 kg', 'Oat milk 1 l', 'Dark chocolate 70 %']) insert.run(name);
      const found = db.prepare<[string], { name: string }>('SELECT name FROM names WHERE names MATCH ? ORDER BY rowid').all('"ress"');
      assert.deepEqual(found.map((row) => row.name), ['Espresso beans 1 kg']);
    });
  });

  it('tells whether a transaction is open, and which statements return rows', () => {
    withConnection(':memory:', (db) => {
      db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY)');
      assert.equal(db.inTransaction, false);
      db.exec('BEGIN');
      assert.equal(db.inTransaction, true);
      db.exec('COMMIT');
      assert.deepEqual(
        ['SELECT x FROM t', 'INSERT INTO t (x) VALUES (1) RETURNING x', 'INSERT INTO t (x) VALUES (2)'].map((sql) => db.prepare(sql).reader),
        [true, true, false],
      );
    });
  });
});
