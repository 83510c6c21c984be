import type { RunResult } from './load.js';

export interface Row {
  readonly scenario: string;
  readonly target: string;
  readonly service: readonly RunResult[];
  readonly baseline: readonly RunResult[];
}

/** The mean of the rounds (req/s, latencies) and the peak of their memory. */
export function summarise(runs: readonly RunResult[]): RunResult {
  const mean = (pick: (r: RunResult) => number): number => runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
  return {
    requestsPerSecond: mean((r) => r.requestsPerSecond),
    p50: mean((r) => r.p50),
    p99: mean((r) => r.p99),
    peakRss: Math.max(...runs.map((r) => r.peakRss)),
    failures: runs.reduce((sum, r) => sum + r.failures, 0),
  };
}

/** The result table as Markdown, so that it can be pasted into docs/PERFORMANCE.md as printed. */
export function formatTable(rows: readonly Row[]): string {
  const header = ['scenario', 'service req/s', 'baseline req/s', 'ratio', 'service p50/p99 ms', 'baseline p50/p99 ms', 'service peak RSS', 'baseline peak RSS', 'failures', 'target'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const row of rows) {
    const s = summarise(row.service);
    const b = summarise(row.baseline);
    lines.push(
      `| ${[
        row.scenario,
        s.requestsPerSecond.toFixed(0),
        b.requestsPerSecond.toFixed(0),
        (s.requestsPerSecond / b.requestsPerSecond).toFixed(2),
        `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`,
        `${b.p50.toFixed(1)} / ${b.p99.toFixed(1)}`,
        megabytes(s.peakRss),
        megabytes(b.peakRss),
        `${s.failures} / ${b.failures}`,
        row.target,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(0)} MB`;
}
