import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openStore } from '../../src/storage/open-store.js';
import { describeEachStore } from '../helpers/each-store.js';
import { outsideSql } from '../helpers/outside-sql.js';

describeEachStore('a database migrated by a newer version', { env: false }, (ctx) => {
  it('is refused with a message that says so', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    await (await openStore(location)).close();
    await outsideSql(location, "insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2099-01-01T00:00:00.000Z')");
    await assert.rejects(openStore(location), {
      name: 'SchemaNewerError',
      message:
        'The database was migrated by a newer version of the catalogue (9999_from_the_future is unknown to this version); run that version or a later one.',
    });
  });
});
