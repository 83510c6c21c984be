import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseLocation } from '../../src/config.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { postJson, send, type RawResponse } from '../helpers/http.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { uniqueBarcode } from '../helpers/products.js';
import { postgres } from '../helpers/stores.js';

/** How many of the service's backends to terminate; `TERMINATIONS=1000` for a long run. */
const TERMINATIONS = Number(process.env.TERMINATIONS ?? 300);
/** Requests kept in flight at once, for each kind: plain creates, keyed creates, reads. */
const LOOPS_PER_KIND = 3;

/** The two 503s a client may get here: the database lost for a moment, or the process overloaded. */
const UNAVAILABLE = ['The catalogue database is not reachable right now; try again shortly.', 'The service is overloaded right now; try again shortly.'].map(
  (detail) => JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail }),
);

interface Tally {
  statuses: Map<number, number>;
  created: Array<{ pk: number; body: unknown }>;
  wrong: string[];
}

describe('PostgreSQL backends of the service terminated while it serves', { skip: postgres.skip }, () => {
  let service: ChildServer;
  let drop: () => Promise<void>;
  let location: DatabaseLocation;
  // Only this test's server carries this name, so only its backends are ever terminated.
  const applicationName = `catalogue_termination_${process.pid}_${Date.now().toString(36)}`;

  before(async () => {
    const created = await postgres.create();
    ({ drop, location } = created);
    if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
    const url = new URL(location.url);
    url.searchParams.set('application_name', applicationName);
    service = await spawnServer({ DATABASE_URL: url.toString() });
  });

  after(async () => {
    if (service !== undefined && service.process.exitCode === null) {
      service.process.kill('SIGTERM');
      await service.exited;
    }
    await drop?.();
  });

  it(`stays up through ${TERMINATIONS} terminations; every 201 is stored and every other answer is a 503 problem`, async () => {
    const tally: Tally = { statuses: new Map(), created: [], wrong: [] };
    let crashed: string | undefined;
    void service.exited.then(({ code, signal }) => (crashed = `the service exited (${code ?? signal}): ${service.stderr()}`));
    let running = true;
    let keys = 0;

    const record = (what: string, res: RawResponse, expectedOk: number): boolean => {
      tally.statuses.set(res.status, (tally.statuses.get(res.status) ?? 0) + 1);
      if (res.status === expectedOk) return true;
      if (res.status !== 503 || !UNAVAILABLE.includes(JSON.stringify(res.json))) {
        tally.wrong.push(`${what}: ${res.status} ${res.text.slice(0, 300)}`);
      }
      return false;
    };
    const create = async (keyed: boolean): Promise<void> => {
      const body = JSON.stringify({ name: 'Terminated tea', barcode: uniqueBarcode(), price: '2.40' });
      const headers: Record<string, string> = keyed ? { 'Idempotency-Key': `term-${process.pid}-${++keys}` } : {};
      // A keyed create is retried with its key until it gets an answer other than 503, as a till would.
      for (let attempt = 0; attempt < 20 && running; attempt++) {
        const res = await postJson(`${service.url}/api/v1/shop/product/`, body, headers);
        if (record(keyed ? 'keyed create' : 'create', res, 201)) {
          tally.created.push({ pk: (res.json as { pk: number }).pk, body: res.json });
          return;
        }
        if (!keyed || res.status !== 503) return;
      }
    };
    await create(false);
    const read = async (): Promise<void> => {
      // One product read whole: the v1 list streams, and a stream cut by a lost connection is cut short.
      const newest = tally.created.at(-1);
      const res = await send(newest === undefined ? `${service.url}/api/v2/shop/products?limit=1` : `${service.url}/api/v1/shop/product/${newest.pk}`);
      record('read', res, 200);
    };
    const loop = async (step: () => Promise<void>): Promise<void> => {
      while (running && crashed === undefined) {
        try {
          await step();
        } catch (error) {
          if (crashed === undefined) tally.wrong.push(`request failed: ${String(error)}`);
          return;
        }
      }
    };
    const loops = Array.from({ length: LOOPS_PER_KIND }, () => [loop(() => create(false)), loop(() => create(true)), loop(read)]).flat();

    let terminated = 0;
    const started = performance.now();
    while (terminated < TERMINATIONS && crashed === undefined && performance.now() - started < 240_000) {
      const [round] = await outsideSql<{ n: string }>(
        location,
        'select count(*) as n from (select pg_terminate_backend(pid) as done from pg_stat_activity where application_name = $1) t where done',
        [applicationName],
      );
      terminated += Number(round?.n);
      // The pace of the fault, not a wait for anything: a round of terminations every 20 ms.
      await sleep(20);
    }
    running = false;
    await Promise.all(loops);
    // Back on its feet: ready again on new backends, without a restart.
    await passesWithin(
      5_000,
      async () => {
        assert.equal(crashed, undefined, `the service ended after ${terminated} terminations`);
        assert.deepEqual((await send(`${service.url}/readyz`)).json, { status: 'ready' });
      },
      50,
    );
    assert.ok(terminated >= TERMINATIONS, `only ${terminated} terminations in the time allowed`);
    assert.deepEqual(tally.wrong.slice(0, 10), []);
    assert.ok(tally.created.length > 0, 'no create succeeded');
    for (const { pk, body } of tally.created) {
      let res = await send(`${service.url}/api/v1/shop/product/${pk}`);
      if (res.status === 503) res = await send(`${service.url}/api/v1/shop/product/${pk}`);
      assert.equal(res.status, 200, `product ${pk} was answered 201 but is not stored`);
      assert.deepEqual(res.json, body);
    }
    const figures = [...tally.statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status}: ${count}`);
    console.log(`# ${terminated} terminations in ${Math.round(performance.now() - started)} ms; answers ${figures.join(', ')}; ${tally.created.length} created`);
  });
});
