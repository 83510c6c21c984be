import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateBarcodeError } from '../../src/catalogue/errors.js';
import { migrateStore, openStore } from '../../src/storage/open-store.js';
import { postgresErrors } from '../../src/storage/postgres/dialect.js';
import { outsideSql, withClient } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedCount } from '../helpers/store-contents.js';
import { postgres } from '../helpers/stores.js';

describe('PostgreSQL errors', () => {
  type Reading = { unique: boolean; connection: boolean; busy: boolean; timeout: boolean };
  const none: Reading = { unique: false, connection: false, busy: false, timeout: false };
  const connection: Reading = { ...none, connection: true };
  const cases: Array<[string, unknown, Reading]> = [
    ['unique violation', Object.assign(new Error('duplicate key'), { code: '23505' }), { ...none, unique: true }],
    ['refused connection', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), connection],
    ['reset connection', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), connection],
    ['server shut down', Object.assign(new Error('terminating connection'), { code: '57P01' }), connection],
    ['connection exception class', Object.assign(new Error('connection failure'), { code: '08006' }), connection],
    // A statement past its time limit is a timeout, never an unreachable database.
    ['statement timeout', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }), { ...none, timeout: true }],
    ['lock timeout', Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }), { ...none, busy: true }],
    ['lost socket', new Error('Connection terminated unexpectedly'), connection],
    ['full pool', new Error('timeout exceeded when trying to connect'), connection],
    ['every address refused', new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]), connection],
    ['database closed to connections', Object.assign(new Error('database "shop" is not currently accepting connections'), { code: '55000' }), connection],
    ['dropped database', Object.assign(new Error('database "shop" does not exist'), { code: '3D000' }), connection],
    ['role refused', Object.assign(new Error('password authentication failed for user "catalogue"'), { code: '28P01' }), connection],
    ['other prerequisite error', Object.assign(new Error('currval of sequence "s" is not yet defined in this session'), { code: '55000' }), none],
    ['missing table', Object.assign(new Error('relation does not exist'), { code: '42P01' }), none],
    ['check violation', Object.assign(new Error('violates check'), { code: '23514' }), none],
    ['not an error', 'ECONNREFUSED', none],
  ];
  for (const [name, error, expected] of cases) {
    it(`reads a ${name}`, () => {
      assert.deepEqual(
        {
          unique: postgresErrors.isUniqueViolation(error),
          connection: postgresErrors.isConnectionFailure(error),
          busy: postgresErrors.isBusy(error),
          timeout: postgresErrors.isTimeout(error),
        },
        expected,
      );
    });
  }
});

/** Longer than the store lets a query take while serving (its query_timeout, 6 s). */
const LONGER_THAN_A_QUERY_MS = 7_000;

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
    const [recorded] = await outsideSql<{ n: string }>(location, 'select count(*) as n from kysely_migration');
    assert.equal(Number(recorded?.n), migrations);
  });

  it('wait for another instance that migrates, longer than any request may take', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    await withClient(location.url, async (other) => {
      // Kysely's migrator on PostgreSQL serialises on this transaction-level advisory lock.
      await other.query('begin');
      await other.query('select pg_advisory_xact_lock(3853314791062309107)');
      const opening = openStore(location);
      t.after(async () => (await opening.catch(() => undefined))?.close());
      let opened = false;
      void opening.then(() => (opened = true), () => (opened = true));
      // Held on purpose past a request's query time limit (6 s): how long is what this test is about.
      await new Promise((resolve) => setTimeout(resolve, LONGER_THAN_A_QUERY_MS));
      assert.equal(opened, false, 'the store opened, or gave up, while another instance held the migration lock');
      await other.query('commit');
      assert.equal(await storedCount(await opening), 0);
    });
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

  it('open a catalogue while other catalogues\' schemas in the same database are created and dropped', async (t) => {
    const mine = await postgres.create();
    t.after(mine.drop);
    // Another shop's deployment (or its tests) making and dropping catalogues in the same database, as
    // fast as it can, while this one opens again and again: a start that read every schema's tables by
    // name (Kysely's own introspector does) met one dropped between reading its name and looking it up.
    let churning = true;
    const churn = (async () => {
      while (churning) {
        const other = await postgres.create();
        if (other.location.kind === 'postgres') await outsideSql(other.location, 'CREATE TABLE shelf (id serial PRIMARY KEY, name text)');
        await other.drop();
      }
    })();
    t.after(async () => {
      churning = false;
      await churn;
    });
    for (let i = 0; i < 40; i++) {
      const store = await openStore(mine.location, { poolMax: 1 });
      await store.close();
    }
    churning = false;
    await churn;
  });

  it('store money as exact integer cents up to the largest price', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    const store = await openStore(location);
    t.after(() => store.close());
    const created = await store.createProduct({ name: 'Yacht', barcode: uniqueBarcode(), priceCents: 999_999_999_999 });
    assert.deepEqual(await store.findProduct(created.pk), { ...created, priceCents: 999_999_999_999 });
  });

  it('reads the steps of whole lists one at a time: three lists waiting on a lock wait on one statement', async (t) => {
    const { location, drop } = await postgres.create();
    t.after(drop);
    if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    // Only this store's backends carry this name.
    const applicationName = `catalogue_list_turns_${process.pid}_${Date.now().toString(36)}`;
    const url = new URL(location.url);
    url.searchParams.set('application_name', applicationName);
    // Statements wait on the lock for as long as the test holds it, not the service's 3 s.
    const store = await openStore({ kind: 'postgres', url: url.toString() }, { poolMax: 5, writeWaitMs: 60_000 });
    t.after(() => store.close());
    for (let i = 0; i < 3; i++) await store.createProduct({ name: `Step ${i}`, barcode: uniqueBarcode(), priceCents: 100 });
    // Connections opened beforehand, so that the statements below go out in the order they are made.
    await Promise.all(Array.from({ length: 5 }, () => store.ping()));
    const waitingOn = async (pattern: string): Promise<number> =>
      Number((await outsideSql<{ n: string }>(location, `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND query ILIKE $2`, [applicationName, pattern]))[0]!.n);

    await withClient(location.url, async (holder) => {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE product IN ACCESS EXCLUSIVE MODE');
      const steps = [0, 0, 0].map(() => store.listProductsJsonAfter(0, 10));
      // A product read made after them waits on the lock too: once it does, any step sent before it would.
      const found = store.findProduct(1);
      await passesWithin(60_000, async () => assert.equal(await waitingOn('%from "product" where "pk"%'), 1), 20);
      assert.equal(await waitingOn('%string_agg%'), 1, 'the steps of other lists wait their turn in the service, not in the database');
      await holder.query('COMMIT');
      const read = await Promise.all(steps);
      assert.deepEqual(read.map((step) => step.count), [3, 3, 3]);
      assert.equal((await found)?.pk, 1);
    });
  });
});
