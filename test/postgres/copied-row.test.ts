import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { copiedRow } from '../../src/storage/postgres/copied-row.js';
import { withClient } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { postgres } from '../helpers/stores.js';

/** Each value as text, as the reader of a text row decodes it. */
const texts = (row: Array<Uint8Array | null> | undefined) => row?.map((value) => (value === null ? null : Buffer.from(value).toString('utf8')));

describe('a row read by COPY on PostgreSQL (the steps of the whole list)', { skip: postgres.skip }, () => {
  let drop: () => Promise<void>;
  let url: string;
  let pool: pg.Pool;
  /** What the reader was told about each error: whether it lost its connection. */
  const failures: unknown[] = [];
  const connectionLost = (error: unknown): boolean => {
    failures.push(error);
    return /terminat/i.test(String(error));
  };

  before(async () => {
    const created = await postgres.create();
    drop = created.drop;
    if (created.location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    url = created.location.url;
    // One connection, so that a connection pooled again after it broke would fail the next read.
    pool = new pg.Pool({ connectionString: url, max: 1, query_timeout: 1_000, idleTimeoutMillis: 0, application_name: `copied_row_${process.pid}` });
    pool.on('error', () => undefined);
  });

  after(async () => {
    await pool.end();
    await drop();
  });

  it('hands each text column over as its UTF-8 bytes, NULL as null, and no row as undefined', async () => {
    const row = await copiedRow(pool, "SELECT 'Crème brûlée 🍮, 6 × 100 g' AS a, CAST(NULL AS text) AS b, '' AS c, repeat('ä', 100000) AS d", connectionLost);
    assert.deepEqual(texts(row), ['Crème brûlée 🍮, 6 × 100 g', null, '', 'ä'.repeat(100_000)]);
    assert.equal(await copiedRow(pool, 'SELECT CAST(1 AS text) WHERE false', connectionLost), undefined);
  });

  it("leaves no timer of pg's query time limit running after it, to report a timeout on the finished COPY", async () => {
    // The pool's connection is open before, and a released one sets no timer of its own (no idle limit).
    await pool.query('SELECT 1');
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    assert.deepEqual(texts(await copiedRow(pool, "SELECT 'x'", connectionLost)), ['x']);
    assert.equal(timers(), before);
  });

  it("rejects with the database's error, and its connection serves the next read", async () => {
    await assert.rejects(copiedRow(pool, 'SELECT CAST(1 / 0 AS text)', connectionLost), { code: '22012' });
    assert.deepEqual(texts(await copiedRow(pool, "SELECT 'after'", connectionLost)), ['after']);
  });

  it('rejects when its connection is cut during the COPY, and the connection is not pooled again', async () => {
    const refused = assert.rejects(copiedRow(pool, 'SELECT CAST(pg_sleep(30) AS text)', connectionLost), /terminat/i);
    // Cut once the COPY runs, from a connection of the test's own.
    await withClient(url, async (admin) => {
      await passesWithin(10_000, async () => {
        const { rows } = await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'COPY%' AND state = 'active'", [`copied_row_${process.pid}`]);
        assert.equal(rows.length, 1);
        await admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      });
    });
    await refused;
    assert.equal(connectionLost(failures.at(-1)), true);
    // The pool's one connection was closed: the next read opens a new one and is answered.
    assert.deepEqual(texts(await copiedRow(pool, "SELECT 'again'", connectionLost)), ['again']);
  });
});
