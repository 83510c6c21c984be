import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeAnswers } from './answers.js';
import { catalogueCount, checkAnswers } from './check.js';
import { send } from './client.js';
import { BENCH_HOST } from './expected.js';
import type { BenchOptions } from './options.js';
import { freePort, residentBytes, startTarget, type Target } from './processes.js';
import { megabytes, rate, type Row } from './report.js';
import type { DatabaseKind, Exchange, Pagination, Scenario } from './scenarios.js';
import { errorTotal, runWrk, type LoadResult } from './wrk.js';

const BASELINES = join(resolve(import.meta.dirname), 'baselines');
/** Barcode numbers each wrk thread may use in one run of the create scenario (see wrk/create.lua). */
const BARCODES_PER_THREAD = 10_000_000;
/** Barcode number 0 is the check's own create; the numbers have ten digits. */
export const FIRST_LOAD_BARCODE = 1;
const LAST_BARCODE = 9_999_999_999;
/** wrk's CPU above this share of its threads means the row may show wrk's limit, not the target's. */
const LOAD_CPU_WARNING = 0.9;
/** Exchanges checked per scenario and target, spread over the list (all of them in a smoke run). */
const CHECKED_PER_SCENARIO = 25;

/** A failure that ends the run with its message and no stack. */
export class BenchFailure extends Error {}

/** A build of the service: the one under test has the empty label; others come from --compare. */
export interface Build {
  readonly label: string;
  readonly dist: string;
  /** The service's WORKERS setting. */
  readonly workers: number;
}

export interface Run {
  readonly options: BenchOptions;
  readonly kind: DatabaseKind;
  readonly builds: readonly Build[];
  /** Services by `serviceKey`. */
  readonly services: ReadonlyMap<string, Target>;
  /** The run's scratch folder. */
  readonly work: string;
  /** Warnings and failures gathered on the way, printed under the table. */
  readonly notes: string[];
  readonly failures: string[];
  nextBarcode: number;
}

export function serviceKey(build: Build, pagination: Pagination): string {
  return `${build.label}|${pagination}`;
}

/** Checks, warms up and measures one scenario on every target; one row per connection count and build. */
export async function measure(run: Run, scenario: Scenario): Promise<Row[]> {
  const exchanges = scenario.exchanges();
  const answers = join(run.work, `answers-${scenario.name}.json`);
  writeAnswers(answers, scenario, exchanges);
  const started = await Promise.allSettled([startBaseline('node:http', 'node-http.mjs', answers), startBaseline('Fastify', 'fastify.mjs', answers)]);
  const baselines = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    const services = run.builds.map((build) => run.services.get(serviceKey(build, scenario.pagination))!);
    return await measureOn(run, scenario, exchanges, baselines[0]!, baselines[1]!, services);
  } finally {
    await Promise.all(baselines.map((b) => b.stop()));
  }
}

async function measureOn(run: Run, scenario: Scenario, exchanges: readonly Exchange[], nodeHttp: Target, fastify: Target, services: readonly Target[]): Promise<Row[]> {
  const { options } = run;
  const targets = [nodeHttp, fastify, ...services];
  const checked = options.smoke ? Infinity : CHECKED_PER_SCENARIO;
  const problems = await checkAnswers(scenario, exchanges, targets, checked);
  if (problems.length > 0) throw new BenchFailure(`${scenario.name}: answers differ from the contract's:\n  ${listed(problems)}`);
  if (scenario.timeFirstByte === true) run.notes.push(await firstByte(scenario, exchanges[0]!, targets, services[0]!));
  const countsBefore = scenario.load === 'create' ? await Promise.all(services.map(catalogueCount)) : [];

  const rows: Row[] = [];
  // Every run, warm-ups included: each create they made is in the catalogue.
  const runs = new Map<Target, LoadResult[]>(targets.map((t) => [t, []]));
  let inFlightAtStops = 0;
  for (const connections of scenario.connections ?? [options.connections]) {
    const drive = async (target: Target, seconds: number, what: string): Promise<LoadResult> => {
      const result = await driveOnce(run, scenario, exchanges, target, connections, seconds);
      report(run, scenario, target, connections, what, result);
      runs.get(target)!.push(result);
      return result;
    };
    if (options.warmup > 0) for (const target of targets) await drive(target, options.warmup, 'warm-up');
    const measured = new Map<Target, LoadResult[]>(targets.map((t) => [t, []]));
    for (let round = 0; round < options.rounds; round++) {
      for (const target of rotate(targets, round)) measured.get(target)!.push(await drive(target, options.duration, `round ${round + 1}/${options.rounds}`));
    }
    for (const [i, build] of run.builds.entries()) {
      rows.push({
        scenario: build.label === '' ? scenario.name : `${scenario.name} [${build.label}]`,
        connections,
        goal: scenario.goal[run.kind],
        nodeHttp: measured.get(nodeHttp)!,
        fastify: measured.get(fastify)!,
        service: measured.get(services[i]!)!,
      });
    }
    inFlightAtStops += connections * ((options.warmup > 0 ? 1 : 0) + options.rounds);
  }
  if (scenario.load === 'create') {
    await checkCreates(run, services, countsBefore, runs, inFlightAtStops);
  } else {
    // Reads change nothing, so the same answers are still due: a target that went wrong under load shows here.
    const after = await checkAnswers(scenario, exchanges, targets, checked);
    if (after.length > 0) run.failures.push(`${scenario.name}, after the load: answers differ from the contract's:\n  ${listed(after)}`);
  }
  return rows;
}

function listed(problems: readonly string[]): string {
  const shown = problems.slice(0, 10).join('\n  ');
  return problems.length > 10 ? `${shown}\n  ... and ${problems.length - 10} more` : shown;
}

/** A baseline for one scenario only, so that its memory holds that scenario's answers alone. */
async function startBaseline(label: string, file: string, answers: string): Promise<Target> {
  const port = await freePort();
  return startTarget(label, port, [join(BASELINES, file), answers, String(port)], {});
}

async function driveOnce(run: Run, scenario: Scenario, exchanges: readonly Exchange[], target: Target, connections: number, seconds: number): Promise<LoadResult> {
  const threads = Math.min(run.options.threads, connections);
  let args: string[];
  if (scenario.load === 'create') {
    const last = run.nextBarcode + threads * BARCODES_PER_THREAD - 1;
    if (last > LAST_BARCODE) throw new BenchFailure('the create scenario has used up its barcode numbers: run fewer rounds');
    args = [exchanges[0]!.path, String(run.nextBarcode), String(BARCODES_PER_THREAD)];
    run.nextBarcode = last + 1;
  } else {
    const paths = join(run.work, `paths-${scenario.name}.txt`);
    if (!existsSync(paths)) writeFileSync(paths, exchanges.map((e) => e.path).join('\n'));
    // The same seed for every target: each is asked the same sequence of URLs.
    args = [paths, '1'];
  }
  // `Host` spelled so, or wrk adds its own beside it.
  const headers = { Host: BENCH_HOST, ...scenario.headers };
  return runWrk({ port: target.port, pid: target.child.pid!, threads, connections, seconds, headers, script: scenario.load, args });
}

/** A progress line per run, and a failure or a note where the run calls for one. */
function report(run: Run, scenario: Scenario, target: Target, connections: number, what: string, result: LoadResult): void {
  const where = `${scenario.name} ×${connections} ${what}, ${target.label}`;
  process.stderr.write(
    `  ${where}: ${rate(result.requestsPerSecond)} req/s, p99 ${result.p99Ms.toFixed(2)} ms, ` +
      `CPU ${(result.targetCpu * 100).toFixed(0)} % (wrk ${(result.loadCpu * 100).toFixed(0)} %)\n`,
  );
  if (errorTotal(result.errors) > 0) {
    const e = result.errors;
    run.failures.push(`${where}: ${e.status} answers ≥ 400; socket errors: connect ${e.connect}, read ${e.read}, write ${e.write}, timeout ${e.timeout}`);
  }
  const threads = Math.min(run.options.threads, connections);
  if (result.loadCpu > LOAD_CPU_WARNING * threads) {
    run.notes.push(`Note: wrk used ${(result.loadCpu * 100).toFixed(0)} % CPU in ${where}: that rate may be wrk's limit; try --threads ${threads + 1}.`);
  }
}

/** The first target in each round moves on by one, so that no target always follows the same one. */
function rotate<T>(items: readonly T[], by: number): T[] {
  const at = by % items.length;
  return [...items.slice(at), ...items.slice(0, at)];
}

/** Time to the first byte of one whole list with nothing else running, best of three per target. */
async function firstByte(scenario: Scenario, exchange: Exchange, targets: readonly Target[], service: Target): Promise<string> {
  const rssBefore = residentBytes(service.child.pid!);
  const parts: string[] = [];
  for (const target of targets) {
    let best = Infinity;
    for (let i = 0; i < 3; i++) best = Math.min(best, (await send(target.port, { method: 'GET', path: exchange.path, headers: scenario.headers })).firstByteMs);
    parts.push(`${target.label} ${best.toFixed(1)} ms`);
  }
  return `${scenario.name}, one request alone, time to first byte (best of 3): ${parts.join(', ')}; ${service.label} RSS before: ${megabytes(rssBefore)}.`;
}

/**
 * Every create the load saw answered must be in the catalogue: the count grows by at least the
 * answers wrk counted, and by at most `allowance` more (requests still in flight when a run stopped).
 */
async function checkCreates(run: Run, services: readonly Target[], before: readonly number[], runs: ReadonlyMap<Target, readonly LoadResult[]>, allowance: number): Promise<void> {
  for (const [i, service] of services.entries()) {
    const answered = runs.get(service)!.reduce((sum, r) => sum + r.requests, 0);
    const grown = (await catalogueCount(service)) - before[i]!;
    if (grown < answered || grown > answered + allowance) {
      run.failures.push(`create, ${service.label}: ${answered.toLocaleString('en')} creates answered, but the count grew by ${grown.toLocaleString('en')}`);
    }
  }
}

