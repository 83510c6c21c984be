import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { foldForSearch } from '../../src/catalogue/search.js';
import type { SqliteConnection } from '../../src/storage/sqlite/driver.js';

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
