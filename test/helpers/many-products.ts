import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { foldForSearch } from '../../src/catalogue/search.js';
import type { DatabaseLocation } from '../../src/config.js';
import type { SqliteConnection } from '../../src/storage/sqlite/driver.js';
import { outsideSql } from './outside-sql.js';

const WORDS = ['tea', 'coffee', 'bread', 'milk', 'salt'];

/**
 * Writes `count` products `Item <n> <word>` (the words in turn: tea, coffee, bread, milk, salt) straight
 * into an SQLite file, folded copies included, inside the caller's transaction: creating them one by
 * one would take minutes. Barcodes are valid EAN-13s starting with `prefix`.
 */
export function insertManyProducts(db: SqliteConnection, count: number, prefix: string): void {
  const insert = db.prepare<[string, string, string, number]>('INSERT INTO product (name, name_folded, barcode, price_cents) VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= count; i += 1) {
    const name = `Item ${i} ${WORDS[i % WORDS.length]!}`;
    const first12 = `${prefix}${String(i).padStart(12 - prefix.length, '0')}`;
    insert.run(name, foldForSearch(name), first12 + String(ean13CheckDigit(first12)), 100 + i);
  }
}

/**
 * Inserts `count` products named `Long name Long name ... <n>` (some 195 characters) in one statement
 * behind the service's back, on either database: a lot of changes at once, some 330 bytes each in the
 * feed, far more than the socket buffers and the service keep for one client. Barcodes are `29` and
 * the row's number in 11 digits (no valid EAN-13s: plain SQL does not check them).
 */
export async function insertLongNamedProducts(location: DatabaseLocation, count: number): Promise<void> {
  const name = `'${'Long name '.repeat(19)}'`;
  const series =
    location.kind === 'sqlite'
      ? `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count}) SELECT ${name} || i, lower(${name}) || i, printf('29%011d', i), i FROM n`
      : `SELECT ${name} || i, lower(${name}) || i, '29' || lpad(i::text, 11, '0'), i FROM generate_series(1, ${count}) AS i`;
  await outsideSql(location, `INSERT INTO product (name, name_folded, barcode, price_cents) ${series}`);
}
