import type { DatabaseLocation } from '../../src/config.js';
import { migrateUpTo } from '../../src/storage/migrations.js';
import { openDialect } from '../../src/storage/open-store.js';

/** Migrates the database up to `last` and no further: the catalogue as the service of that version left it. */
export async function migratedUpTo(location: DatabaseLocation, last: string): Promise<void> {
  const dialect = openDialect(location, { poolMax: 1 }, 'migrate');
  try {
    await migrateUpTo(dialect, last);
  } finally {
    await dialect.close();
  }
}
