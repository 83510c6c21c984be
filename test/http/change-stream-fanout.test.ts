import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { databaseUrl, spawnServer } from '../helpers/child-server.js';
import { describeEachStore } from '../helpers/each-store.js';
import { openEventStream, type EventStreamClient } from '../helpers/event-stream.js';
import { createProduct } from '../helpers/products.js';

/**
 * Open streams on one service process. The figures in docs/PERFORMANCE.md were taken with
 * FANOUT_STREAMS=500 (latency) and FANOUT_STREAMS=1000 (memory); the default keeps the suite quick.
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

const percentile = (values: readonly number[], p: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;

describeEachStore('the live change feed, many streams on one process', { env: false, timeout: 180_000 }, (ctx) => {
  it(`brings a change to ${STREAMS} open streams within 200 ms at p99, with bounded memory per stream`, async (t) => {
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

    const delays: number[] = [];
    for (let change = 0; change < CHANGES; change++) {
      const started = performance.now();
      const product = await createProduct(server.url);
      const carries = `"pk":${product.pk},`;
      await Promise.all(
        streams.map(async (stream) => {
          await stream.waitFor((event) => event.data?.includes(carries) === true, 10_000);
          delays.push(performance.now() - started);
        }),
      );
    }
    const p99 = percentile(delays, 99);
    const perStream = (open - idle) / STREAMS;
    t.diagnostic(
      `${STREAMS} streams, ${CHANGES} changes: from the create's request to its event p50 ${percentile(delays, 50).toFixed(1)} ms, ` +
        `p99 ${p99.toFixed(1)} ms, max ${Math.max(...delays).toFixed(1)} ms; RSS ${(idle / 2 ** 20).toFixed(0)} MB idle, ` +
        `${(open / 2 ** 20).toFixed(0)} MB with the streams open: ${(perStream / 1024).toFixed(1)} KB per stream`,
    );
    assert.ok(p99 <= 200, `p99 ${p99.toFixed(1)} ms`);
    if (idle > 0) assert.ok(perStream <= 64 * 1024, `${(perStream / 1024).toFixed(1)} KB per open stream`);
  });
});
