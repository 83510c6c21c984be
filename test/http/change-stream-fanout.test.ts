import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { databaseUrl, spawnServer } from '../helpers/child-server.js';
import { describeEachStore } from '../helpers/each-store.js';
import { openEventStream, type EventStreamClient } from '../helpers/event-stream.js';
import { createProduct } from '../helpers/products.js';

/**
 * Open streams on one service process. How fast a change reaches them is a benchmark figure
 * (docs/PERFORMANCE.md, taken with FANOUT_STREAMS=500 and 1000); the default keeps the suite quick.
 */
const STREAMS = Number(process.env['FANOUT_STREAMS'] ?? 100);
const CHANGES = 5;

/** Resident memory of a process in bytes, from /proc (0 where there is none). */
function residentBytes(pid: number): number {
  try {
    const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Number(kib ?? 0) * 1024;
  } catch {
    return 0;
  }
}

describeEachStore('the live change feed, many streams on one process', { env: false, timeout: 600_000 }, (ctx) => {
  it(`brings every change to each of ${STREAMS} open streams, once and in order, with bounded memory per stream`, async (t) => {
    const { location } = await ctx.freshDatabase(t);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), CHANGE_STREAMS_MAX: String(STREAMS + 10) });
    t.after(() => server.stop());
    const pid = server.process.pid!;
    await createProduct(server.url);
    const idle = residentBytes(pid);

    const streams: EventStreamClient[] = [];
    t.after(() => streams.forEach((stream) => stream.close()));
    for (let i = 0; i < STREAMS; i++) streams.push(await openEventStream(`${server.url}/api/v2/shop/changes?since=0`));
    assert.ok(streams.every((stream) => stream.status === 200));
    await Promise.all(streams.map((stream) => stream.waitFor((event) => event.event === 'caught-up', 60_000)));
    const open = residentBytes(pid);

    const pks: number[] = [];
    for (let change = 0; change < CHANGES; change++) pks.push((await createProduct(server.url)).pk);
    // The contract's "within a second", ten times over: a bound for a change that never comes, not a speed.
    const last = `"pk":${pks.at(-1)!},`;
    await Promise.all(streams.map((stream) => stream.waitFor((event) => event.data?.includes(last) === true, 10_000)));
    for (const stream of streams) {
      const changed = stream.events.filter((event) => event.event === 'change').map((event) => (JSON.parse(event.data!) as { pk: number }).pk);
      assert.deepEqual(changed.slice(-CHANGES), pks);
      const versions = stream.events.filter((event) => event.event === 'change').map((event) => Number(event.id));
      assert.deepEqual(versions, [...versions].sort((a, b) => a - b));
      assert.equal(new Set(versions).size, versions.length);
    }
    const perStream = (open - idle) / STREAMS;
    t.diagnostic(`RSS ${(idle / 2 ** 20).toFixed(0)} MB idle, ${(open / 2 ** 20).toFixed(0)} MB with ${STREAMS} streams open: ${(perStream / 1024).toFixed(1)} KB per stream`);
    if (idle > 0) assert.ok(perStream <= 64 * 1024, `${(perStream / 1024).toFixed(1)} KB per open stream`);
  });
});
