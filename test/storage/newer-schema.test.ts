import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import type { DatabaseLocation } from '../../src/config.js';
import { openStore } from '../../src/storage/open-store.js';
import { connectPostgres } from '../../src/storage/postgres/connect.js';
import type { Database } from '../../src/storage/schema.js';
import { connectSqlite } from '../../src/storage/sqlite/connect.js';
import { STORES } from '../helpers/stores.js';

function connect(location: DatabaseLocation): Kysely<Database> {
  return location.kind === 'sqlite' ? connectSqlite(location.path) : connectPostgres(location.url, { poolMax: 1, queryTimeLimits: false });
}

for (const testStore of STORES) {
  describe(`a database migrated by a newer version [${testStore.name}]`, { skip: testStore.skip }, () => {
    it('is refused with a message that says so', async () => {
      const { location, drop } = await testStore.create();
      try {
        await (await openStore(location)).close();
        const db = connect(location);
        await sql`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2099-01-01T00:00:00.000Z')`.execute(db);
        await db.destroy();
        await assert.rejects(openStore(location), {
          name: 'SchemaNewerError',
          message:
            'The database was migrated by a newer version of the catalogue (9999_from_the_future is unknown to this version); run that version or a later one.',
        });
      } finally {
        await drop();
      }
    });
  });
}
