import assert from 'node:assert/strict';
import { it } from 'node:test';
import { withClient } from '../helpers/outside-sql.js';
import { postgres } from '../helpers/stores.js';

// Without PostgreSQL this is the line that shows in the summary's skipped count.
it('finds a PostgreSQL server recent enough for identity columns (10 or later)', { skip: postgres.skip }, async () => {
  const { rows } = await withClient(process.env.TEST_DATABASE_URL!, (client) => client.query<{ server_version_num: string }>('show server_version_num'));
  assert.ok(Number(rows[0]!.server_version_num) >= 100_000, `server_version_num ${rows[0]!.server_version_num}`);
});
