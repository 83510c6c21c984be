/**
 * `npm run bench`: seeds a catalogue, starts the production build of the service, then per scenario
 * starts two baselines answering the same bytes (bare node:http, bare Fastify), checks every target's
 * answers against the contract's, and drives each target in turn with wrk. Prints one table.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runBulk } from './bulk.js';
import { runLists } from './lists.js';
import { runSearch } from './search.js';
import { runSlowReaders } from './slow-readers.js';
import { runSync } from './sync.js';
import { BenchFailure, FIRST_LOAD_BARCODE, measure, serviceKey, type Build, type Run } from './measure.js';
import { parseBenchOptions, type BenchOptions } from './options.js';
import { freePort, startTarget, type Target } from './processes.js';
import { formatTable, type Row } from './report.js';
import { buildScenarios, type Pagination, type Scenario } from './scenarios.js';
import { createScratchPostgres, seedPostgres, seedSqlite } from './seed.js';
import { stopLoads, WRK_MISSING, wrkVersion } from './wrk.js';

const ROOT = resolve(import.meta.dirname, '..');
const SERVER = join(ROOT, 'dist', 'server.js');
/**
 * Settings of the bench's own environment that would change the service's answers or refuse its
 * requests, or set its speed (LOG_LEVEL): not passed on. The service runs at its defaults, as `npm
 * start` runs it, with what `--with` gives laid over them.
 */
const SETTINGS_LEFT_OUT = ['API_TOKEN', 'RATE_LIMIT', 'TRUST_PROXY', 'CORS_ORIGIN', 'PAGE_SIZE', 'MAX_LIMIT', 'LOG_LEVEL'];

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
  if (options.bulk.length > 0) return runBulk({ dist: join(ROOT, 'dist'), database: options.database, sizes: options.bulk });
  if (options.sync) return runSync({ dist: join(ROOT, 'dist'), database: options.database, size: options.size, rounds: options.rounds });
  const wrk = wrkVersion();
  if (wrk === undefined) {
    console.error(WRK_MISSING);
    return 1;
  }
  if (options.slowReaders !== undefined) {
    const { streams, workers } = options.slowReaders;
    return runSlowReaders({ dist: join(ROOT, 'dist'), database: options.database, size: options.size, streams, creators: options.connections, duration: options.duration, workers, leftOut: SETTINGS_LEFT_OUT });
  }
  if (options.lists !== undefined) {
    const { clients, workers } = options.lists;
    return runLists({ dist: join(ROOT, 'dist'), database: options.database, size: options.size, clients, workers, env: serviceSettings(options), smoke: options.smoke });
  }
  if (options.search) {
    return runSearch({ dist: join(ROOT, 'dist'), database: options.database, size: options.size, duration: options.duration, rounds: options.rounds, workers: options.workers[0]!, leftOut: SETTINGS_LEFT_OUT, names: options.names });
  }
  const all = buildScenarios(options.size);
  const unknown = options.only.filter((name) => !all.some((s) => s.name === name));
  if (unknown.length > 0) {
    console.error(`--only: no scenario named ${unknown.join(', ')}; the scenarios are ${all.map((s) => s.name).join(', ')}.`);
    return 2;
  }
  const scenarios = all.filter((s) => options.only.length === 0 || options.only.includes(s.name));

  const work = mkdtempSync(join(tmpdir(), 'catalogue-bench-'));
  const cleanups: Array<() => Promise<void>> = [async () => rmSync(work, { recursive: true, force: true })];
  let cleaned: Promise<void> | undefined;
  const cleanUp = (): Promise<void> =>
    (cleaned ??= (async () => {
      stopLoads();
      for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => console.error(`cleanup failed: ${String(error)}`));
    })());
  // An interrupted run still stops its servers and drops its scratch database.
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => void cleanUp().then(() => process.exit(code)));
  }
  try {
    const builds: Build[] =
      options.workers.length === 1
        ? [{ label: '', dist: join(ROOT, 'dist'), workers: options.workers[0]! }]
        : options.workers.map((workers) => ({ label: `WORKERS=${workers}`, dist: join(ROOT, 'dist'), workers }));
    for (const [label, dist] of options.compare) builds.push({ label, dist: resolve(dist), workers: options.workers[0]! });
    const databases = new Map<string, string>();
    for (const build of builds) {
      const databaseUrl = await seed(options, build, work, cleanups);
      if (databaseUrl === undefined) return 0;
      databases.set(build.label, databaseUrl);
    }
    const services = await startServices(builds, databases, new Set(scenarios.map((s) => s.pagination)), serviceSettings(options), cleanups);
    const run: Run = {
      options,
      kind: options.database === undefined ? 'sqlite' : 'postgres',
      builds,
      services,
      work,
      notes: [],
      failures: [],
      nextBarcode: FIRST_LOAD_BARCODE,
    };
    console.log(describeRun(run, scenarios, wrk));
    const rows: Row[] = [];
    for (const scenario of scenarios) rows.push(...(await measure(run, scenario)));
    console.log(`\n${formatTable(rows)}`);
    if (options.workers.length > 1) console.log(`\n${workersComparison(rows, options.workers)}`);
    if (scenarios.some((s) => s.load === 'create')) {
      console.log('\ncreate: node:http and Fastify read each body and answer one fixed 201; the service stores every product.');
    }
    for (const note of run.notes) console.log(note);
    if (run.failures.length > 0) {
      console.error(`\nFAILED:\n  ${run.failures.join('\n  ')}`);
      return 1;
    }
    return 0;
  } catch (error) {
    if (!(error instanceof BenchFailure)) throw error;
    console.error(`\nFAILED: ${error.message}`);
    return 1;
  } finally {
    await cleanUp();
  }
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

/** One service process per build and pagination style, each on its build's database, for the whole run. */
async function startServices(builds: readonly Build[], databases: ReadonlyMap<string, string>, styles: ReadonlySet<Pagination>, settings: Record<string, string | undefined>, cleanups: Array<() => Promise<void>>) {
  const services = new Map<string, Target>();
  const env: Record<string, string | undefined> = { HOST: '127.0.0.1', ...settings };
  for (const build of builds) {
    for (const pagination of styles) {
      const port = await freePort();
      const label = `service${build.label === '' ? '' : ` ${build.label}`}${styles.size > 1 ? ` (${pagination})` : ''}`;
      const service = await startTarget(label, port, [join(build.dist, 'server.js')], {
        ...env,
        PORT: String(port),
        DATABASE_URL: databases.get(build.label)!,
        PAGINATION: pagination,
        WORKERS: String(build.workers),
      });
      cleanups.push(service.stop);
      services.set(serviceKey(build, pagination), service);
    }
  }
  return services;
}

/** The service's settings: its defaults (the bench's own environment's left out), with `--with` laid over them. */
function serviceSettings(options: BenchOptions): Record<string, string | undefined> {
  return { ...Object.fromEntries(SETTINGS_LEFT_OUT.map((name) => [name, undefined])), ...Object.fromEntries(options.with) };
}

/** Each scenario's best req/s with every WORKERS count, as a multiple of the first count's. */
function workersComparison(rows: readonly Row[], workers: readonly number[]): string {
  const best = (row: Row): number => Math.max(...row.service.map((r) => r.requestsPerSecond));
  const lines = [`| scenario | connections | ${workers.map((w) => `WORKERS=${w} req/s`).join(' | ')} | ${workers.slice(1).map((w) => `${w} / ${workers[0]}`).join(' | ')} |`];
  lines.push(`|${' --- |'.repeat(2 + workers.length * 2 - 1)}`);
  const byScenario = new Map<string, Row[]>();
  for (const row of rows) {
    const key = `${row.scenario.replace(/ \[WORKERS=\d+\]$/, '')}|${row.connections}`;
    byScenario.set(key, [...(byScenario.get(key) ?? []), row]);
  }
  for (const [key, group] of byScenario) {
    const [scenario, connections] = key.split('|');
    const rates = group.map(best);
    lines.push(`| ${scenario} | ${connections} | ${rates.map((r) => Math.round(r).toLocaleString('en')).join(' | ')} | ${rates.slice(1).map((r) => (r / rates[0]!).toFixed(2)).join(' | ')} |`);
  }
  return lines.join('\n');
}

/** What the run is and how its figures are taken: printed above the table, so a pasted table keeps it. */
function describeRun(run: Run, scenarios: readonly Scenario[], wrk: string): string {
  const { options } = run;
  const fastify = (JSON.parse(readFileSync(join(ROOT, 'node_modules', 'fastify', 'package.json'), 'utf8')) as { version: string }).version;
  const own = scenarios.filter((s) => s.connections !== undefined).map((s) => `${s.name}: ${s.connections!.join(', ')}`);
  return [
    `\`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\``,
    '',
    `${options.size.toLocaleString('en')} products on ${run.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}; Node ${process.version}, Fastify ${fastify}, wrk ${wrk}, ${availableParallelism()} CPUs.`,
    `Load: wrk with ${options.threads} thread${options.threads === 1 ? '' : 's'} and ${options.connections} connections${own.length > 0 ? ` (${own.join('; ')})` : ''}, ` +
      `${options.duration} s per run${options.warmup > 0 ? ` after ${options.warmup} s of warm-up per target` : ', no warm-up'}; ` +
      `${options.rounds} round${options.rounds === 1 ? '' : 's'}, the targets in a rotating order.`,
    `Service settings: ${options.with.size === 0 ? 'its defaults (LOG_LEVEL info, its log lines to /dev/null)' : [...options.with].map(([name, value]) => `${name}=${value}`).join(' ')}.`,
    `Figures: the best round's req/s with that round's p50/p99; peak RSS over all rounds; wrk CPU in its busiest run (100 % = one core).`,
  ].join('\n');
}

process.exitCode = await main();
