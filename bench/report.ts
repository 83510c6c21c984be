import { errorTotal, type LoadResult } from './wrk.js';

/** One scenario at one connection count, for one build of the service, beside both baselines. */
export interface Row {
  readonly scenario: string;
  readonly connections: number;
  readonly goal: string;
  readonly nodeHttp: readonly LoadResult[];
  readonly fastify: readonly LoadResult[];
  readonly service: readonly LoadResult[];
}

export interface Summary {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The peak over every round: memory is a bound, so its worst case is what counts. */
  readonly peakRss: number;
  /** The load generator's busiest round, in cores. */
  readonly loadCpu: number;
  readonly errors: number;
}

/**
 * The best round: on a shared machine outside work only ever slows a round down, so the fastest one
 * is the closest to what the target can do. Its latencies come with it, from the same round.
 */
export function summarise(runs: readonly LoadResult[]): Summary {
  const best = runs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a));
  return {
    requestsPerSecond: best.requestsPerSecond,
    p50Ms: best.p50Ms,
    p99Ms: best.p99Ms,
    peakRss: Math.max(...runs.map((r) => r.peakRss)),
    loadCpu: Math.max(...runs.map((r) => r.loadCpu)),
    errors: runs.reduce((sum, r) => sum + errorTotal(r.errors), 0),
  };
}

const HEADER = [
  'scenario',
  'conns',
  'node:http req/s',
  'Fastify req/s',
  'service req/s',
  'service / node:http',
  'service / Fastify',
  'p50/p99 ms node:http',
  'p50/p99 ms Fastify',
  'p50/p99 ms service',
  'RSS node:http',
  'RSS Fastify',
  'RSS service',
  'wrk CPU',
  'errors',
  'goal',
];

/** The result table as Markdown, so that it can be pasted into docs/PERFORMANCE.md as printed. */
export function formatTable(rows: readonly Row[]): string {
  const lines = [`| ${HEADER.join(' | ')} |`, `|${HEADER.map(() => '---').join('|')}|`];
  for (const row of rows) {
    const [n, f, s] = [summarise(row.nodeHttp), summarise(row.fastify), summarise(row.service)];
    lines.push(
      `| ${[
        row.scenario,
        row.connections,
        rate(n.requestsPerSecond),
        rate(f.requestsPerSecond),
        rate(s.requestsPerSecond),
        ratio(s.requestsPerSecond, n.requestsPerSecond),
        ratio(s.requestsPerSecond, f.requestsPerSecond),
        latency(n),
        latency(f),
        latency(s),
        megabytes(n.peakRss),
        megabytes(f.peakRss),
        megabytes(s.peakRss),
        `${(Math.max(n.loadCpu, f.loadCpu, s.loadCpu) * 100).toFixed(0)} %`,
        n.errors + f.errors + s.errors,
        row.goal,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

export function rate(requestsPerSecond: number): string {
  return Math.round(requestsPerSecond).toLocaleString('en');
}

function ratio(a: number, b: number): string {
  return b > 0 ? (a / b).toFixed(2) : '-';
}

function latency(summary: Summary): string {
  return `${summary.p50Ms.toFixed(2)} / ${summary.p99Ms.toFixed(2)}`;
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(0)} MB`;
}
