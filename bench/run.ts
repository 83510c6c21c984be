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
    const builds: Build[] = [{ label: '', dist: join(ROOT, 'dist') }];
    for (const [label, dist] of options.compare) builds.push({ label, dist: resolve(dist) });
    const databases = new Map<string, string>();
    for (const build of builds) {
      const databaseUrl = await seed(options, build, work, cleanups);
      if (databaseUrl === undefined) return 0;
      databases.set(build.label, databaseUrl);
    }
    return await measure(options, builds, databases, work, cleanups);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => console.error(`cleanup failed: ${String(error)}`));
  }
}

/** A build of the service: the one under test has the empty label; others come from --compare. */
interface Build {
  readonly label: string;
  readonly dist: string;
}

/** Seeds a database of its own for one build; returns its DATABASE_URL, or `undefined` when the run is skipped. */
async function seed(options: BenchOptions, build: Build, work: string, cleanups: Array<() => Promise<void>>): Promise<string | undefined> {
  const started = performance.now();
  const progress = (done: number, total: number): void => {
    process.stderr.write(`\rseeding ${done.toLocaleString('en')} / ${total.toLocaleString('en')} products${build.label === '' ? '' : ` for ${build.label}`}`);
  };
  let url: string;
  if (options.database === undefined) {
    const path = join(work, `catalogue${build.label === '' ? '' : `-${build.label}`}.db`);
    await seedSqlite(build.dist, path, options.size, progress);
    url = `sqlite:${path}`;
  } else {
    const scratch = await createScratchPostgres(options.database);
    cleanups.push(scratch.drop);
    try {
      await seedPostgres(build.dist, scratch.url, options.size, progress);
    } catch (error) {
      if (error instanceof Error && /not supported/i.test(error.message)) {
        console.error(`PostgreSQL run skipped: this build of the service cannot open PostgreSQL yet (${error.message.trim().split('\n').at(-1)}).`);
        return undefined;
      }
      throw error;
    }
    url = scratch.url;
  }
  process.stderr.write(` in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return url;
}

async function measure(options: BenchOptions, builds: readonly Build[], databases: ReadonlyMap<string, string>, work: string, cleanups: Array<() => Promise<void>>): Promise<number> {
  const scenarios = buildScenarios(options.size).filter((s) => options.only.length === 0 || options.only.includes(s.name));
  if (scenarios.length === 0) {
    console.error(`--only matched no scenario; the scenarios are ${buildScenarios(200).map((s) => s.name).join(', ')}.`);
    return 2;
  }
  const routesFile = join(work, 'baseline-routes.json');
  writeBaselineRoutes(routesFile, scenarios);

  const services = new Map<string, Target>();
  const serviceFor = (build: Build, pagination: Pagination): Target => services.get(`${build.label}|${pagination}`)!;
  for (const build of builds) {
    for (const pagination of new Set(scenarios.map((s) => s.pagination))) {
      const port = await freePort();
      const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databases.get(build.label)!, PAGINATION: pagination, LOG_LEVEL: 'warn' };
      const label = `service${build.label === '' ? '' : ` ${build.label}`} (${pagination})`;
      const service = await startTarget(label, port, [join(build.dist, 'server.js')], env, '/api/v1/shop/product/1');
      cleanups.push(service.stop);
      services.set(`${build.label}|${pagination}`, service);
    }
  }
  const baselinePort = await freePort();
  const baseline = await startTarget('baseline', baselinePort, ['--import', 'tsx', join(ROOT, 'bench', 'baseline-server.ts'), routesFile, String(baselinePort)], process.env, '/');
  cleanups.push(baseline.stop);

  const mismatches = await checkBodies(scenarios, [...services.values()], baseline, options.smoke ? Infinity : 20);
  if (mismatches.length > 0) {
    console.error(`The service and the baseline do not answer the same bytes:\n${mismatches.join('\n')}`);
    return 1;
  }
  const v1 = scenarios.find((s) => s.name === 'v1-list');
  const firstByte = v1 === undefined ? undefined : await v1FirstByte(v1, serviceFor(builds[0]!, v1.pagination), baseline);

  console.error(
    `${options.size.toLocaleString('en')} products on ${options.database === undefined ? 'SQLite' : 'PostgreSQL'}; ` +
      `${options.connections} connections, ${options.duration} s per run, ${options.rounds} round(s) of service then baseline`,
  );
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    const runs = builds.map(() => [] as RunResult[]);
    const baselineRuns: RunResult[] = [];
    if (!options.smoke) {
      // Warm every target (JIT, caches) before anything is counted.
      for (const build of builds) await drive(serviceFor(build, scenario.pagination), scenario, options.connections, 1);
      await drive(baseline, scenario, options.connections, 1);
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const [i, build] of builds.entries()) runs[i]!.push(await drive(serviceFor(build, scenario.pagination), scenario, options.connections, options.duration));
      baselineRuns.push(await drive(baseline, scenario, options.connections, options.duration));
    }
    for (const [i, build] of builds.entries()) {
      rows.push({ scenario: build.label === '' ? scenario.name : `${scenario.name} [${build.label}]`, target: scenario.target, service: runs[i]!, baseline: baselineRuns });
    }
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
async function checkBodies(scenarios: readonly Scenario[], services: readonly Target[], baseline: Target, perScenario: number): Promise<string[]> {
  const problems: string[] = [];
  for (const scenario of scenarios) {
    const paths = [...scenario.bodies.keys()].slice(0, perScenario);
    for (const path of paths) {
      const expected = scenario.bodies.get(path)!;
      const targets = services.filter((service) => service.label.endsWith(`(${scenario.pagination})`));
      for (const target of [...targets, baseline]) {
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
async function v1FirstByte(scenario: Scenario, service: Target, baseline: Target) {
  const rssBefore = residentBytes(service.child.pid!);
  const best = async (target: Target): Promise<number> => {
    let min = Infinity;
    for (let i = 0; i < 3; i++) min = Math.min(min, (await fetchOnce(target.port, scenario.paths[0]!)).firstByteMs);
    return min;
  };
  return { service: await best(service), baseline: await best(baseline), rssBefore };
}

process.exitCode = await main();
