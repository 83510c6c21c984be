import { send } from './client.js';
import type { Target } from './processes.js';
import { V2_PATH } from './expected.js';
import type { Exchange, Scenario } from './scenarios.js';

/**
 * Sends up to `limit` of the scenario's exchanges (spread over the list) to every target and
 * compares status, content type, content coding, `Location` and every byte of the body with what the
 * contract promises. A create is sent once per target: it adds a product.
 * @returns one line per difference; empty when every target answered as expected.
 */
export async function checkAnswers(scenario: Scenario, exchanges: readonly Exchange[], targets: readonly Target[], limit: number): Promise<string[]> {
  const step = Math.max(1, Math.ceil(exchanges.length / limit));
  const sample = exchanges.filter((_, i) => i % step === 0 || i === exchanges.length - 1);
  const problems: string[] = [];
  for (const target of targets) {
    for (const exchange of sample) {
      const what = `${target.label}: ${exchange.method} ${exchange.path}`;
      let got;
      try {
        got = await send(target.port, { method: exchange.method, path: exchange.path, headers: scenario.headers, body: exchange.body });
      } catch (error) {
        problems.push(`${what}: no answer (${error instanceof Error ? error.message : String(error)})`);
        // A target that cannot be reached once will not answer the rest either: one line says it.
        break;
      }
      const text = got.body.toString('utf8');
      if (got.status !== exchange.status) problems.push(`${what}: status ${got.status}, expected ${exchange.status}: ${text.slice(0, 200)}`);
      else if (!String(got.headers['content-type']).startsWith('application/json')) problems.push(`${what}: Content-Type ${got.headers['content-type']}`);
      else if (got.headers['content-encoding'] !== scenario.encoding) problems.push(`${what}: Content-Encoding ${got.headers['content-encoding']}, expected ${scenario.encoding ?? 'none'}`);
      else if (exchange.location !== undefined && got.headers['location'] !== exchange.location) problems.push(`${what}: Location ${got.headers['location']}, expected ${exchange.location}`);
      else if (text !== exchange.answer) problems.push(`${what}: ${text.length} characters, expected ${exchange.answer.length}; ${firstDifference(text, exchange.answer)}`);
    }
  }
  return problems;
}

function firstDifference(actual: string, expected: string): string {
  let i = 0;
  while (i < actual.length && actual[i] === expected[i]) i++;
  return `first difference at ${i}: got ${JSON.stringify(actual.slice(i, i + 60))}, expected ${JSON.stringify(expected.slice(i, i + 60))}`;
}

/** The catalogue's `count`, as a target's v2 listing states it. */
export async function catalogueCount(target: Target): Promise<number> {
  const got = await send(target.port, { method: 'GET', path: V2_PATH });
  const count = (JSON.parse(got.body.toString('utf8')) as { count?: unknown }).count;
  if (got.status !== 200 || typeof count !== 'number') throw new Error(`${target.label}: GET ${V2_PATH} answered ${got.status} without a count`);
  return count;
}
