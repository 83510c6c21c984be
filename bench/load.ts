import { request } from 'node:http';
import autocannon from 'autocannon';
import { BENCH_HOST, type Scenario } from './scenarios.js';
import { samplePeakRss, type Target } from './processes.js';

export interface RunResult {
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly peakRss: number;
  /** Answers that were not 2xx, plus socket errors and timeouts. */
  readonly failures: number;
}

/** Drives one target with one scenario for `duration` seconds and samples its memory meanwhile. */
export async function drive(target: Target, scenario: Scenario, connections: number, duration: number): Promise<RunResult> {
  const paths = scenario.paths;
  const rss = samplePeakRss(target.child.pid!);
  const result = await autocannon({
    url: `http://127.0.0.1:${target.port}`,
    connections: Math.min(connections, scenario.maxConnections ?? connections),
    duration,
    // A whole list of a million products takes seconds; it is slow, not failed.
    timeout: 60,
    method: scenario.method,
    headers: scenario.method === 'POST' ? { host: BENCH_HOST, 'content-type': 'application/json' } : { host: BENCH_HOST },
    requests: [
      {
        setupRequest: (req) => {
          const path = paths[Math.floor(Math.random() * paths.length)]!;
          return scenario.nextBody === undefined ? { ...req, path } : { ...req, path, body: scenario.nextBody() };
        },
      },
    ],
  });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    peakRss: rss.stop(),
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

/** One GET, with the bench's Host; resolves with the status, the body and the milliseconds to the first body byte. */
export function fetchOnce(port: number, path: string): Promise<{ status: number; body: Buffer; firstByteMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port, path, headers: { host: BENCH_HOST }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let firstByteMs = -1;
      res.on('data', (chunk: Buffer) => {
        if (firstByteMs < 0) firstByteMs = performance.now() - started;
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), firstByteMs }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
