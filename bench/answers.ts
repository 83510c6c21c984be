import { writeFileSync } from 'node:fs';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { Exchange, Scenario } from './scenarios.js';

/**
 * Lays out a scenario's answers for the baselines (`baselines/answers.mjs` reads them): `file` lists
 * them, `file.body` holds their bytes, encoded as the scenario asks.
 */
export function writeAnswers(file: string, scenario: Scenario, exchanges: readonly Exchange[]): void {
  const entries = [];
  const bodies: Buffer[] = [];
  let start = 0;
  for (const exchange of exchanges) {
    const body = encode(Buffer.from(exchange.answer), scenario.encoding);
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
    if (exchange.location !== undefined) headers['location'] = exchange.location;
    if (scenario.encoding !== undefined) {
      headers['content-encoding'] = scenario.encoding;
      headers['vary'] = 'Accept-Encoding';
    }
    entries.push({ method: exchange.method, route: scenario.route, path: exchange.path, status: exchange.status, headers, start, length: body.length });
    bodies.push(body);
    start += body.length;
  }
  writeFileSync(`${file}.body`, Buffer.concat(bodies));
  writeFileSync(file, JSON.stringify(entries));
}

function encode(body: Buffer, encoding: Scenario['encoding']): Buffer {
  switch (encoding) {
    case undefined:
      return body;
    case 'gzip':
      return gzipSync(body);
    case 'br':
      return brotliCompressSync(body);
  }
}
