/**
 * `npm run bench -- --sync`: what a till's whole copy through the change feed (`since=0`,
 * `limit=10000`, following `next`) costs the service, against the v1 list of the same catalogue in the
 * same run. The measure is CPU seconds: the service's, and on PostgreSQL also those of this machine's
 * postgres processes, which do part of the work. Each read is made by a client in a process of its
 * own (bench/sync-client.ts) that reads every answer whole over one keep-alive connection, as a till
 * would; the list and the sync alternate, after one list to warm the service.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { cpuSeconds } from './processes.js';
import { megabytes } from './report.js';
import { serveScratchCatalogue } from './seed.js';

const run = promisify(execFile);
const CLIENT = join(resolve(import.meta.dirname), 'sync-client.ts');

export interface SyncOptions {
  readonly dist: string;
  /** `undefined`: an SQLite file; otherwise a PostgreSQL server URL to create a scratch database on. */
  readonly database: string | undefined;
  readonly size: number;
  readonly rounds: number;
}

/** What the client read: one mode, whole. */
interface Read {
  readonly products: number;
  readonly bytes: number;
  readonly seconds: number;
}

/** Seeds a catalogue, reads it both ways `rounds` times and prints a table; returns the exit code. */
export async function runSync(options: SyncOptions): Promise<number> {
  const { kind, port, pid, close } = await serveScratchCatalogue(options.dist, options.database, options.size, { WORKERS: '1' });
  try {
    const base = `http://127.0.0.1:${port}`;
    await read(base, 'list');
    console.log(`A whole copy through the change feed against the v1 list: ${options.size.toLocaleString('en')} products on ${kind}, WORKERS=1; Node ${process.version}.`);
    console.log('CPU seconds used while the client read (service; and this machine\'s postgres processes on PostgreSQL).\n');
    console.log('| round | v1 list: wall / service / database | full sync, limit=10000: wall / service / database | sync / list, CPU |');
    console.log('|---|---|---|---|');
    // On SQLite the postgres processes (if any) are none of the service's work.
    const database = kind === 'PostgreSQL' ? postgresCpuSeconds : () => 0;
    for (let round = 1; round <= options.rounds; round++) {
      const list = await measured(pid, database, () => read(base, 'list'));
      const sync = await measured(pid, database, () => read(base, 'sync'));
      if (list.read.products !== options.size || sync.read.products !== options.size) {
        throw new Error(`read ${list.read.products} products by the list and ${sync.read.products} by the sync; expected ${options.size}`);
      }
      const cell = (m: typeof list): string => `${m.read.seconds.toFixed(2)} s / ${m.service.toFixed(2)} s / ${kind === 'SQLite' ? '-' : `${m.database.toFixed(2)} s`}`;
      const listCpu = list.service + list.database;
      // A small catalogue (--smoke) can read in less than a clock tick.
      const ratio = listCpu > 0 ? ((sync.service + sync.database) / listCpu).toFixed(2) : '-';
      console.log(`| ${round} | ${cell(list)} | ${cell(sync)} | ${ratio} |`);
      if (round === options.rounds) console.log(`\nBytes read: list ${megabytes(list.read.bytes)}, sync ${megabytes(sync.read.bytes)}.`);
    }
    return 0;
  } finally {
    await close();
  }
}

async function measured(servicePid: number, databaseCpu: () => number, reading: () => Promise<Read>): Promise<{ read: Read; service: number; database: number }> {
  const [service, database] = [cpuSeconds(servicePid), databaseCpu()];
  const done = await reading();
  return { read: done, service: cpuSeconds(servicePid) - service, database: databaseCpu() - database };
}

async function read(base: string, mode: 'list' | 'sync'): Promise<Read> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', CLIENT, base, mode], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as Read;
}

/** CPU seconds of every process named postgres on this machine so far (0 for a database elsewhere). */
function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Each process alone: the postmaster's descendants are the other postgres processes.
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += cpuSeconds(Number(entry), true);
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}
