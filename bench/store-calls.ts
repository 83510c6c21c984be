// The SQLite store's cost per call, without HTTP: a point read (`findProduct`) and a page of 100
// (`readPage` at a random offset) over 10,000 products, on whichever driver this Node uses. It tells
// drivers and Node versions apart where the wrk benchmark's figures are dominated by the rest.
//   node --import tsx bench/store-calls.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/storage/open-store.js';
import { seededProduct } from './data.js';

const PRODUCTS = 10_000;
const ROUNDS = 5;
const POINT_CALLS = 50_000;
const PAGE_CALLS = 3_000;
const PAGE_SIZE = 100;

/**
 * Microseconds of this process's CPU time (user + system) per call of `call` over `count` calls, the
 * median of ROUNDS rounds after a warm-up. CPU time rather than wall time: on a shared machine the wait
 * for a core would otherwise be counted as the driver's.
 */
async function perCall(count: number, call: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < count / 10; i++) await call(i);
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.cpuUsage();
    for (let i = 0; i < count; i++) await call(i);
    const used = process.cpuUsage(started);
    rounds.push((used.user + used.system) / count);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

const dir = mkdtempSync(join(tmpdir(), 'catalogue-store-calls-'));
try {
  const store = await openStore({ kind: 'sqlite', path: join(dir, 'catalogue.db') });
  try {
    const products = Array.from({ length: PRODUCTS }, (_, i) => seededProduct(i + 1));
    await store.insertProducts((async function* () { yield products; })());
    // A fixed pseudo-random walk, the same in every run.
    const pk = (i: number) => ((i * 7919) % PRODUCTS) + 1;
    const offset = (i: number) => (i * 7919) % (PRODUCTS - PAGE_SIZE);
    const point = await perCall(POINT_CALLS, (i) => store.findProduct(pk(i)));
    const page = await perCall(PAGE_CALLS, (i) => store.readPage(offset(i), PAGE_SIZE));
    console.log(`Node ${process.versions.node}: findProduct ${point.toFixed(1)} µs, readPage(100) ${page.toFixed(1)} µs per call (CPU time)`);
  } finally {
    await store.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
