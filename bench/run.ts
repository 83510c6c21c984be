/**
 * `npm run bench`: seeds a catalogue, starts the production build of the service and a bare node:http
 * baseline as child processes, checks that both answer byte-identical bodies, then drives each scenario
 * against both in turn (service, baseline, service, baseline, ...) and prints one table.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Pagination } from '../src/config.js';
import type { BaselineRoute } from './baseline-server.js';
import { drive, fetchOnce, type RunResult } from './load.js';
import { parseBenchOptions, type BenchOptions } from './options.js';
import { freePort, residentBytes, startTarget, type Target } from './processes.js';
import { formatTable, megabytes, type Row } from './report.js';
import { buildScenarios, type Scenario } from './scenarios.js';
import { createScratchPostgres, seedPostgres, seedSqlite } from './seed.js';

const ROOT = resolve(import.meta.dirname, '..');
const SERVER = join(ROOT, 'dist', 'server.js');

async function main(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseBenchOptions(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
  if (!existsSync(SERVER)) {
    console.error(`${SERVER} is missing: run \`npm run build\` first (npm run bench does).`);
    return 1;
  }
  const work = mkdtempSync(join(tmpdir(), 'catalogue-bench-'));
  const cleanups: Array<() => Promise<void>> = [async () => rmSync(work, { recursive: true, force: true })];
  try {
    const databaseUrl = await seed(options, work, cleanups);
    if (databaseUrl === undefined) return 0;
    return await measure(options, databaseUrl, work, cleanups);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => console.error(`cleanup failed: ${String(error)}`));
  }
}

/** Seeds the database; returns the service's DATABASE_URL, or `undefined` when the run is skipped. */
async function seed(options: BenchOptions, work: string, cleanups: Array<() => Promise<void>>): Promise<string | undefined> {
  const started = performance.now();
  const progress = (done: number, total: number): void => {
    process.stderr.write(`\rseeding ${done.toLocaleString('en')} / ${total.toLocaleString('en')} products`);
  };
  let url: string;
  if (options.database === undefined) {
    const path = join(work, 'catalogue.db');
    await seedSqlite(path, options.size, progress);
    url = `sqlite:${path}`;
  } else {
    const scratch = await createScratchPostgres(options.database);
    cleanups.push(scratch.drop);
    try {
      await seedPostgres({ kind: 'postgres', url: scratch.url }, options.size, progress);
    } catch (error) {
      if (error instanceof Error && /not supported/i.test(error.message)) {
        console.error(`PostgreSQL run skipped: the store cannot open PostgreSQL yet (${error.message}).`);
        return undefined;
      }
      throw error;
    }
    url = scratch.url;
  }
  process.stderr.write(` in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return url;
}

async function measure(options: BenchOptions, databaseUrl: string, work: string, cleanups: Array<() => Promise<void>>): Promise<number> {
  const scenarios = buildScenarios(options.size).filter((s) => options.only.length === 0 || options.only.includes(s.name));
  if (scenarios.length === 0) {
    console.error(`--only matched no scenario; the scenarios are ${buildScenarios(200).map((s) => s.name).join(', ')}.`);
    return 2;
  }
  const routesFile = join(work, 'baseline-routes.json');
  writeBaselineRoutes(routesFile, scenarios);

  const services = new Map<Pagination, Target>();
  for (const pagination of new Set(scenarios.map((s) => s.pagination))) {
    const port = await freePort();
    const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, PAGINATION: pagination, LOG_LEVEL: 'warn' };
    const service = await startTarget(`service (${pagination})`, port, [SERVER], env, '/api/v1/shop/product/1');
    cleanups.push(service.stop);
    services.set(pagination, service);
  }
  const baselinePort = await freePort();
  const baseline = await startTarget('baseline', baselinePort, ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts'), routesFile, String(baselinePort)], process.env, '/');
  cleanups.push(baseline.stop);

  const mismatches = await checkBodies(scenarios, services, baseline, options.smoke ? Infinity : 20);
  if (mismatches.length > 0) {
    console.error(`The service and the baseline do not answer the same bytes:\n${mismatches.join('\n')}`);
    return 1;
  }
  const firstByte = await v1FirstByte(scenarios, services, baseline);

  console.error(
    `${options.size.toLocaleString('en')} products on ${options.database === undefined ? 'SQLite' : 'PostgreSQL'}; ` +
      `${options.connections} connections, ${options.duration} s per run, ${options.rounds} round(s) of service then baseline`,
  );
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    const service = services.get(scenario.pagination)!;
    const serviceRuns: RunResult[] = [];
    const baselineRuns: RunResult[] = [];
    if (!options.smoke) {
      // Warm both (JIT, caches) before anything is counted.
      await drive(service, scenario, options.connections, 1);
      await drive(baseline, scenario, options.connections, 1);
    }
    for (let round = 0; round < options.rounds; round++) {
      serviceRuns.push(await drive(service, scenario, options.connections, options.duration));
      baselineRuns.push(await drive(baseline, scenario, options.connections, options.duration));
    }
    rows.push({ scenario: scenario.name, target: scenario.target, service: serviceRuns, baseline: baselineRuns });
    process.stderr.write(`  ${scenario.name} done\n`);
  }

  console.log(formatTable(rows));
  if (firstByte !== undefined) {
    console.log(
      `\nv1 list, one request alone: first byte ${firstByte.service.toFixed(1)} ms (baseline ${firstByte.baseline.toFixed(1)} ms); ` +
        `service RSS before ${megabytes(firstByte.rssBefore)}`,
    );
  }
  const failed = rows.filter((row) => row.service.some((r) => r.failures > 0));
  if (failed.length > 0) {
    console.error(`\nThe service answered errors in: ${failed.map((r) => r.scenario).join(', ')}`);
    return 1;
  }
  return 0;
}

/** Lays out every precomputed answer in one file the baseline maps into memory at start. */
function writeBaselineRoutes(file: string, scenarios: readonly Scenario[]): void {
  const routes: BaselineRoute[] = [];
  const bodies: Buffer[] = [];
  let start = 0;
  const add = (key: string, status: number, text: string, location?: string): void => {
    const body = Buffer.from(text);
    routes.push({ key, status, start, length: body.length, ...(location === undefined ? {} : { location }) });
    bodies.push(body);
    start += body.length;
  };
  for (const scenario of scenarios) {
    for (const [path, body] of scenario.bodies) add(`GET ${path}`, 200, body);
    if (scenario.createdBody !== undefined) add(`POST ${scenario.paths[0]}`, 201, scenario.createdBody, '/api/v1/shop/product/1');
  }
  add('GET /', 200, '{}');
  writeFileSync(`${file}.body`, Buffer.concat(bodies));
  writeFileSync(file, JSON.stringify(routes));
}

/** Compares both targets' answers with the expected bytes for up to `perScenario` URLs of each GET scenario. */
async function checkBodies(scenarios: readonly Scenario[], services: ReadonlyMap<Pagination, Target>, baseline: Target, perScenario: number): Promise<string[]> {
  const problems: string[] = [];
  for (const scenario of scenarios) {
    const paths = [...scenario.bodies.keys()].slice(0, perScenario);
    for (const path of paths) {
      const expected = scenario.bodies.get(path)!;
      for (const target of [services.get(scenario.pagination)!, baseline]) {
        const { status, body } = await fetchOnce(target.port, path);
        const text = body.toString('utf8');
        if (status !== 200 || text !== expected) {
          problems.push(`  ${target.label} GET ${path}: ${status}, ${text.length} bytes, expected ${expected.length}: ${firstDifference(text, expected)}`);
        }
      }
    }
  }
  return problems;
}

function firstDifference(actual: string, expected: string): string {
  let i = 0;
  while (i < actual.length && actual[i] === expected[i]) i++;
  return `at ${i}: got ${JSON.stringify(actual.slice(i, i + 60))}, expected ${JSON.stringify(expected.slice(i, i + 60))}`;
}

/** The v1 list's time to first byte with nothing else running, best of three. */
async function v1FirstByte(scenarios: readonly Scenario[], services: ReadonlyMap<Pagination, Target>, baseline: Target) {
  const scenario = scenarios.find((s) => s.name === 'v1-list');
  if (scenario === undefined) return undefined;
  const service = services.get(scenario.pagination)!;
  const rssBefore = residentBytes(service.child.pid!);
  const best = async (target: Target): Promise<number> => {
    let min = Infinity;
    for (let i = 0; i < 3; i++) min = Math.min(min, (await fetchOnce(target.port, scenario.paths[0]!)).firstByteMs);
    return min;
  };
  return { service: await best(service), baseline: await best(baseline), rssBefore };
}

process.exitCode = await main();
