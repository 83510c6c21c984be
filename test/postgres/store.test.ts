import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from 'pg';
import { DuplicateBarcodeError } from '../../src/catalogue/errors.js';
import { migrateStore, openStore } from '../../src/storage/open-store.js';
import { postgresErrors } from '../../src/storage/postgres/dialect.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedCount } from '../helpers/store-contents.js';
import { postgres } from '../helpers/stores.js';

describe('PostgreSQL errors', () => {
  const cases: Array<[string, unknown, { unique: boolean; connection: boolean }]> = [
    ['unique violation', Object.assign(new Error('duplicate key'), { code: '23505' }), { unique: true, connection: false }],
    ['refused connection', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), { unique: false, connection: true }],
    ['reset connection', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), { unique: false, connection: true }],
    ['server shut down', Object.assign(new Error('terminating connection'), { code: '57P01' }), { unique: false, connection: true }],
    ['connection exception class', Object.assign(new Error('connection failure'), { code: '08006' }), { unique: false, connection: true }],
    ['statement timeout', Object.assign(new Error('canceling statement'), { code: '57014' }), { unique: false, connection: true }],
    ['lost socket', new Error('Connection terminated unexpectedly'), { unique: false, connection: true }],
    ['full pool', new Error('timeout exceeded when trying to connect'), { unique: false, connection: true }],
    ['every address refused', new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]), { unique: false, connection: true }],
    ['missing table', Object.assign(new Error('relation does not exist'), { code: '42P01' }), { unique: false, connection: false }],
    ['check violation', Object.assign(new Error('violates check'), { code: '23514' }), { unique: false, connection: false }],
    ['not an error', 'ECONNREFUSED', { unique: false, connection: false }],
  ];
  for (const [name, error, expected] of cases) {
    it(`reads a ${name}`, () => {
      assert.deepEqual(
        { unique: postgresErrors.isUniqueViolation(error), connection: postgresErrors.isConnectionFailure(error) },
        expected,
      );
    });
  }
});

describe('PostgreSQL migrations', { skip: postgres.skip }, () => {
  it('bring a schema up to date once when several instances start together', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    const stores = await Promise.all([1, 2, 3, 4].map(() => openStore(location, { poolMax: 2 })));
    t.after(() => Promise.all(stores.map((store) => store.close())));

    const created = await stores[0]!.createProduct({ name: 'Tea', barcode: uniqueBarcode(), priceCents: 250 });
    for (const store of stores) assert.deepEqual(await store.findProduct(created.pk), created);
    // Each migration recorded once: as many rows as a fresh database runs migrations.
    const migrations = (await migrateStore({ kind: 'sqlite', path: ':memory:' })).length;
    assert.deepEqual(await countRows(location.kind === 'postgres' ? location.url : '', 'kysely_migration'), migrations);
  });

  it('wait for another instance that migrates, longer than any request may take', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    const other = new Client({ connectionString: location.url });
    await other.connect();
    t.after(() => other.end());
    // Kysely's migrator on PostgreSQL serialises on this transaction-level advisory lock.
    await other.query('begin');
    await other.query('select pg_advisory_xact_lock(3853314791062309107)');

    const started = performance.now();
    const opening = openStore(location);
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    await other.query('commit');
    const store = await opening;
    t.after(() => store.close());
    assert.ok(performance.now() - started >= 7_000);
    assert.equal(await storedCount(store), 0);
  });

  it('keep each schema to itself when one database holds several', async (t) => {
    const first = await postgres.create();
    t.after(first.drop);
    const second = await postgres.create();
    t.after(second.drop);
    const firstStore = await openStore(first.location);
    t.after(() => firstStore.close());
    const secondStore = await openStore(second.location);
    t.after(() => secondStore.close());

    const barcode = uniqueBarcode();
    await firstStore.createProduct({ name: 'Tea', barcode, priceCents: 250 });
    // The same barcode is free in another schema: it is another catalogue.
    const other = await secondStore.createProduct({ name: 'Tea', barcode, priceCents: 250 });
    assert.equal(other.pk, 1);
    assert.equal(await storedCount(secondStore), 1);
    await assert.rejects(secondStore.createProduct({ name: 'Again', barcode, priceCents: 1 }), DuplicateBarcodeError);
  });

  it('store money as exact integer cents up to the largest price', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    const store = await openStore(location);
    t.after(() => store.close());
    const created = await store.createProduct({ name: 'Yacht', barcode: uniqueBarcode(), priceCents: 999_999_999_999 });
    assert.deepEqual(await store.findProduct(created.pk), { ...created, priceCents: 999_999_999_999 });
  });
});

async function countRows(url: string, table: string): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${table}`);
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}
