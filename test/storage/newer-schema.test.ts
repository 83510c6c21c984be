import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDialect, openStore } from '../../src/storage/open-store.js';
import { STORES } from '../helpers/stores.js';

for (const testStore of STORES) {
  describe(`a database migrated by a newer version [${testStore.name}]`, { skip: testStore.skip }, () => {
    it('is refused with a message that says so', async () => {
      const { location, drop } = await testStore.create();
      try {
        await (await openStore(location)).close();
        const dialect = openDialect(location, { poolMax: 1 }, 'migrate');
        await sql`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2099-01-01T00:00:00.000Z')`.execute(dialect.db);
        await dialect.close();
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
