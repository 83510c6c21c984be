/**
 * `npm run bench -- --lists`: the whole v1 list at a million beside detail reads. A catalogue of
 * `size` products; for each coding in turn (plain, gzip, br), `clients` clients read
 * `GET /api/v1/shop/products` at once, each to its end, while 4 more read product details one after
 * another until the last list is read. Reported per coding: every list answer's status and whether it
 * is complete (every product, in one JSON array), the slowest list's seconds, the detail reads' count
 * and p50/p99/max, and the instance's peak RSS (every worker) meanwhile.
 *
 * As in `--slow-readers`, there is no bare-framework baseline: what is measured is whether the lists
 * hold the other requests back.
 */
import { Agent, get, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip } from 'node:zlib';
import { randomSource } from './data.js';
import { residentBytes } from './processes.js';
import { megabytes } from './report.js';
import { serveScratchCatalogue } from './seed.js';

export interface ListsOptions {
  readonly dist: string;
  /** `undefined`: an SQLite file; otherwise a PostgreSQL server URL to create a scratch database on. */
  readonly database: string | undefined;
  readonly size: number;
  /** Clients reading the list at once, per coding. */
  readonly clients: number;
  /** The service's WORKERS: a number, or `auto` (its default). */
  readonly workers: string;
  /** The service's settings (a setting given as `undefined` is left out). */
  readonly env: Record<string, string | undefined>;
  readonly smoke: boolean;
}

type Coding = 'plain' | 'gzip' | 'br';
const CODINGS: readonly Coding[] = ['plain', 'gzip', 'br'];
/** Clients reading product details beside the lists, one read after another each. */
const DETAIL_READERS = 4;

interface ListAnswer {
  readonly status: number;
  readonly products: number;
  readonly whole: boolean;
  readonly seconds: number;
}

/** Seeds a catalogue, reads the lists beside details in each coding, prints the table; returns the exit code. */
export async function runLists(options: ListsOptions): Promise<number> {
  const served = await serveScratchCatalogue(options.dist, options.database, options.size, { ...options.env, WORKERS: options.workers });
  const failures: string[] = [];
  const lines = [
    `\`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\``,
    '',
    `${options.size.toLocaleString('en')} products on ${served.kind}, WORKERS=${options.workers}; ${options.clients} clients reading the whole v1 list at once per coding, ${DETAIL_READERS} reading details beside them.`,
    '',
    '| coding | list answers | complete | slowest list s | detail reads | detail p50 ms | detail p99 ms | detail max ms | peak RSS |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  try {
    const base = `http://127.0.0.1:${served.port}`;
    const random = randomSource(41);
    for (const coding of CODINGS) {
      let peak = residentBytes(served.pid);
      const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(served.pid))), 50);
      let listsDone = false;
      const latencies: number[] = [];
      const agent = new Agent({ keepAlive: true, maxSockets: DETAIL_READERS });
      const detailReader = async (): Promise<void> => {
        while (!listsDone) {
          const started = performance.now();
          const status = await statusOf(`${base}/api/v1/shop/product/${1 + Math.floor(random() * options.size)}`, agent);
          latencies.push(performance.now() - started);
          if (status !== 200) failures.push(`${coding}: a detail read answered ${status}`);
        }
      };
      const details = Array.from({ length: DETAIL_READERS }, detailReader);
      const answers = await Promise.all(Array.from({ length: options.clients }, () => readList(`${base}/api/v1/shop/products`, coding)));
      listsDone = true;
      await Promise.all(details);
      agent.destroy();
      clearInterval(sampler);
      const statuses = new Map<number, number>();
      for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      const complete = answers.filter((answer) => answer.status === 200 && answer.whole && answer.products === options.size).length;
      if (complete < answers.length) failures.push(`${coding}: ${answers.length - complete} of ${answers.length} lists were not answered whole`);
      latencies.sort((a, b) => a - b);
      const at = (q: number): string => (latencies.length === 0 ? '-' : latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(1));
      lines.push(
        `| ${coding} | ${[...statuses].map(([status, count]) => `${count} × ${status}`).join(', ')} | ${complete} / ${answers.length} | ${Math.max(...answers.map((a) => a.seconds)).toFixed(1)} | ${latencies.length} | ${at(0.5)} | ${at(0.99)} | ${latencies.length === 0 ? '-' : latencies.at(-1)!.toFixed(1)} | ${megabytes(peak)} |`,
      );
    }
  } finally {
    await served.close();
  }
  console.log(lines.join('\n'));
  if (failures.length > 0) {
    console.error(`\nFAILED:\n  ${failures.join('\n  ')}`);
    return 1;
  }
  return 0;
}

function statusOf(url: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', reject);
    }).on('error', reject);
  });
}

/** Reads one list to its end in `coding`, decoding it, and counts its products without keeping it. */
function readList(url: string, coding: Coding): Promise<ListAnswer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers = coding === 'plain' ? {} : { 'Accept-Encoding': coding };
    get(url, { headers, agent: false }, (response: IncomingMessage) => {
      const status = response.statusCode ?? 0;
      const sent = response.headers['content-encoding'] ?? 'plain';
      const body: Readable = sent === 'gzip' ? response.pipe(createGunzip()) : sent === 'br' ? response.pipe(createBrotliDecompress()) : response;
      let products = 0;
      let first = '';
      let tail = '';
      body.setEncoding('utf8');
      body.on('data', (text: string) => {
        if (first === '') first = text.slice(0, 1);
        // `{"pk":` starts every product and nothing else: a quote inside a name is escaped.
        const joined = tail + text;
        // The tail kept is shorter than the mark: no product is counted twice.
        for (let at = joined.indexOf('{"pk":'); at !== -1; at = joined.indexOf('{"pk":', at + 1)) products += 1;
        tail = joined.slice(-5);
      });
      body.on('end', () => resolve({ status, products, whole: first === '[' && tail.endsWith(']') && sent === coding, seconds: (performance.now() - started) / 1000 }));
      body.on('error', reject);
    }).on('error', reject);
  });
}
