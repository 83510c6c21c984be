import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent } from 'node:http';
import { connect as netConnect } from 'node:net';
import { before, describe, it, type TestContext } from 'node:test';
import { databaseUrl, runServiceUntilExit, spawnChild, spawnQuietServer, spawnServer, type ChildServer } from '../helpers/child-server.js';
import { sqlite } from '../helpers/stores.js';
import { WORKER_SEMI_SPACE_MB } from '../../src/workers/worker-heap.js';
import { describeEachStore } from '../helpers/each-store.js';
import { openEventStream, type EventStreamClient } from '../helpers/event-stream.js';
import { send } from '../helpers/http.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import type { DatabaseLocation } from '../../src/config.js';
import { ensureBuild, ROOT } from '../helpers/build.js';

/** The pids of the workers that have said they listen, in the order they did. */
function workerPids(server: ChildServer): number[] {
  return server.logs.filter((line) => line.msg?.startsWith('Server listening at ')).map((line) => line.pid!);
}

/** The processes the primary `pid` has forked and that still run. */
function childPids(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return children === '' ? [] : children.split(/\s+/).map(Number);
}

/** Whether process `pid` has started the worker's program: Node's cluster gives it NODE_UNIQUE_ID. */
function runsWorker(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').some((entry) => entry.startsWith('NODE_UNIQUE_ID='));
  } catch {
    return false;
  }
}

/**
 * The pid of a process the primary `pid` forks that is not among `known`, as soon as it runs the worker's
 * program. Not sooner: a child stopped between its fork and its exec stops the primary with it, whose
 * spawn waits for that exec (libuv's uv_spawn), so that nothing the primary answers would be the test's.
 */
async function newWorker(pid: number, known: readonly number[]): Promise<number> {
  for (;;) {
    const fresh = childPids(pid).find((child) => !known.includes(child));
    if (fresh !== undefined && runsWorker(fresh)) return fresh;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sends `name` to process `pid` unless it has ended. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already.
  }
}

/** `answer`, or a failure naming the wait when it has not come within `ms` (a test fails rather than hangs). */
async function answerWithin<T>(ms: number, answer: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** A keep-alive agent of one connection, ended after test `t`: requests over it stay with one worker. */
function keptConnection(t: TestContext): Agent {
  const kept = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => kept.destroy());
  return kept;
}

/** The pid of the worker that serves `agent`'s connection, from its log line for a request made to learn it. */
async function workerServing(server: ChildServer, agent: Agent): Promise<number> {
  const probe = `/api/v1/shop/product/${900_000_000 + Math.floor(Math.random() * 1_000_000)}`;
  assert.equal((await send(`${server.url}${probe}`, { agent })).status, 404);
  return (await server.waitForLog((l) => l.msg === 'request completed' && l.req?.url === probe)).pid!;
}

/** Creates a product over `agent`'s connection; fails unless it is answered 201 within 30 s (a bound for a hang). */
async function createOver(server: ChildServer, agent: Agent, name: string): Promise<number> {
  const body = JSON.stringify({ name, barcode: uniqueBarcode(), price: '1.00' });
  const created = await answerWithin(30_000, send(`${server.url}/api/v1/shop/product/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, agent }));
  assert.equal(created.status, 201, created.text);
  return (created.json as { pk: number }).pk;
}

/** The primary's count of writes that waited its whole limit for another worker to take note (/metrics, over `agent`). */
async function writesHeldUp(server: ChildServer, agent: Agent): Promise<number | undefined> {
  let held: number | undefined;
  // A 503 while a worker just thawed has yet to answer its questions: asked again.
  await passesWithin(30_000, async () => {
    const metrics = await send(`${server.url}/metrics`, { agent });
    assert.equal(metrics.status, 200, metrics.text);
    held = sample(metrics.text, 'catalogue_writes_held_by_workers_total');
  }, 100);
  return held;
}

/** The pid of the first process the primary `pid` forks, as soon as it is forked. */
async function firstWorker(pid: number): Promise<number> {
  for (;;) {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    if (children !== '') return Number(children.split(/\s+/)[0]);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A SQLite location of the test's own, removed after it. */
async function sqliteLocation(t: TestContext): Promise<{ location: DatabaseLocation }> {
  const { location, drop } = await sqlite.create();
  t.after(drop);
  return { location };
}

/** The value of a sample in Prometheus text (`name` with its labels, as written), or undefined. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * Stops the PostgreSQL backends of both workers' listening connections (SIGSTOP) until test `t` ends,
 * so that no notice of a commit reaches the service meanwhile; PostgreSQL runs on this machine in the
 * tests. Each worker's listener starts with its first request.
 */
async function holdNotices(t: TestContext, location: DatabaseLocation, server: ChildServer): Promise<void> {
  let pids: number[] = [];
  await passesWithin(5_000, async () => {
    for (let i = 0; i < 2; i++) await send(`${server.url}/api/v1/shop/products`);
    pids = (
      await outsideSql<{ pid: number }>(location, "SELECT pid FROM pg_stat_activity WHERE application_name = 'catalogue listener catalogue_' || md5(current_schema())")
    ).map((row) => row.pid);
    assert.equal(pids.length, 2);
  });
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  t.after(() => {
    for (const pid of pids) process.kill(pid, 'SIGCONT');
  });
}

async function startWorkers(location: DatabaseLocation, env: Record<string, string> = {}): Promise<ChildServer> {
  return spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '2', ...env });
}

// A limit for a hang, not a bound on speed: the block's tests took up to 103 s on PostgreSQL while CI
// ran another Node's suites beside them.
describeEachStore('WORKERS=2', { env: false, timeout: 900_000 }, (ctx) => {
  /** The service with two workers over a fresh database, stopped after test `t` (if it has not been). */
  const serveWithWorkers = async (t: TestContext, env: Record<string, string> = {}): Promise<ChildServer> => {
    const { location } = await ctx.freshDatabase(t);
    const server = await startWorkers(location, env);
    t.after(() => server.stop());
    // The primary's `serving at` line can reach the pipe before a worker's own `Server listening at`.
    await server.waitForLog((line) => line.msg?.startsWith('Server listening at ') === true && new Set(workerPids(server)).size === 2);
    return server;
  };

  it('serves one port from two processes: a write through either is read through both, and /metrics counts both', async (t) => {
    const server = await serveWithWorkers(t);
    assert.equal(new Set(workerPids(server)).size, 2);
    assert.ok(!workerPids(server).includes(server.process.pid!), 'the primary serves nothing itself');
    // Each worker's young generation is sized (src/workers/worker-heap.ts): the option is on its command line.
    for (const pid of new Set(workerPids(server))) {
      const options = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      assert.ok(options.includes(`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`), options.join(' '));
    }

    // Every request on a connection of its own: connections reach the workers in turn.
    const created = [];
    for (let i = 0; i < 4; i++) created.push(await createProduct(server.url, { name: `Worker ${i}`, barcode: uniqueBarcode(), price: '1.00' }));
    for (let i = 0; i < 6; i++) {
      const list = await send(`${server.url}/api/v1/shop/products`);
      assert.equal(list.status, 200);
      assert.deepEqual((list.json as Array<{ pk: number }>).map((p) => p.pk), created.map((p) => p.pk));
    }
    const metrics = (await send(`${server.url}/metrics`)).text;
    assert.equal(sample(metrics, 'http_requests_total{method="GET",route="/api/v1/shop/products",status="200"}'), 6);
    assert.equal(sample(metrics, 'http_requests_total{method="POST",route="/api/v1/shop/product/",status="201"}'), 4);
    assert.equal(sample(metrics, 'catalogue_workers'), 2);
    assert.equal((await send(`${server.url}/readyz`)).status, 200);
  });

  // A kept answer is written before routing (src/http/answers/kept-hits.ts), logged at LOG_LEVEL=info
  // and not at warn: the same holds either way.
  for (const logLevel of ['info', 'warn']) {
    it(`reads a write back at once through the other worker, even while the database's own notices of it are held back (LOG_LEVEL=${logLevel})`, async (t) => {
      const { location } = await ctx.freshDatabase(t);
      const server = logLevel === 'info' ? await startWorkers(location) : await spawnQuietServer({ DATABASE_URL: databaseUrl(location), WORKERS: '2' });
      t.after(() => server.stop());
      if (logLevel === 'info') await server.waitForLog((line) => line.msg?.startsWith('Server listening at ') === true && new Set(workerPids(server)).size === 2);
      // PostgreSQL tells each worker of a commit by a notice, which can arrive after the writer has answered
      // and its client has asked again. Holding both workers' listening backends makes that certain.
      if (location.kind === 'postgres') await holdNotices(t, location, server);
      const pks: number[] = [];
      for (let i = 0; i < 10; i++) {
        pks.push((await createProduct(server.url, { name: `Fresh ${i}`, barcode: uniqueBarcode(), price: '1.00' })).pk);
        // Each read on a connection of its own: one reaches each worker, both holding the list from before
        // the create; the two after them find the list each worker has just kept.
        for (let read = 0; read < 4; read++) {
          const list = await send(`${server.url}/api/v1/shop/products`);
          assert.deepEqual((list.json as Array<{ pk: number }>).map((p) => p.pk), pks, `read ${read} after create ${i}`);
        }
      }
      const early = sample((await send(`${server.url}/metrics`)).text, 'http_requests_answered_before_routing_total');
      assert.ok(early! >= 10, `${early} answers were written before routing`);
    });
  }

  it('answers writes at once while a replacement worker is still starting', async (t) => {
    const server = await serveWithWorkers(t);
    const primary = server.process.pid!;
    // The creates go over one kept connection to the worker that stays, so that none can be handed to
    // the replacement, which is held stopped; the other worker is the one killed.
    const kept = keptConnection(t);
    const stays = await workerServing(server, kept);
    /** The workers the primary counts as serving, asked through the worker that stays; 503 while one it counts does not answer. */
    const serving = async (): Promise<number | undefined> => {
      const metrics = await answerWithin(10_000, send(`${server.url}/metrics`, { agent: kept }));
      return metrics.status === 200 ? sample(metrics.text, 'catalogue_workers') : undefined;
    };
    const held: number[] = [];
    try {
      // Held before it listens: a worker that is starting must not hold the others' writes up. A
      // replacement that got as far as listening before it was held (the primary's own count says so;
      // its log line can lag behind) is let go and replaced again.
      let replacement: number | undefined;
      for (let attempt = 0; attempt < 5 && replacement === undefined; attempt++) {
        const victim = childPids(primary).find((pid) => pid !== stays)!;
        const before = childPids(primary);
        process.kill(victim, 'SIGKILL');
        const starting = await newWorker(primary, before);
        process.kill(starting, 'SIGSTOP');
        held.push(starting);
        await new Promise((resolve) => setTimeout(resolve, 300));
        if ((await serving()) === 1) replacement = starting;
        else {
          signal(starting, 'SIGCONT');
          await passesWithin(10_000, async () => assert.equal(await serving(), 2), 100);
        }
      }
      assert.ok(replacement !== undefined, 'a replacement was held before it listened');
      // Not one of them waited for the worker that is starting: had one been asked to take note, the
      // first would have waited out the limit, and the primary counts such a wait.
      for (let i = 0; i < 3; i++) await createOver(server, kept, `While starting ${i}`);
      assert.equal(await serving(), 1, 'the held replacement was never counted as serving');
      assert.equal(await writesHeldUp(server, kept), 0);
    } finally {
      // Let go before the stop: a worker held stopped keeps the service's output open after the primary ends.
      held.forEach((pid) => signal(pid, 'SIGCONT'));
    }
  });

  it('holds writes up once, not every write, while another worker is frozen; thawed, it has taken note of them all', async (t) => {
    const server = await serveWithWorkers(t);
    const kept = keptConnection(t);
    const stays = await workerServing(server, kept);
    const frozen = workerPids(server).find((pid) => pid !== stays)!;
    process.kill(frozen, 'SIGSTOP');
    t.after(() => signal(frozen, 'SIGCONT'));
    // On PostgreSQL, whose own notice of a commit can come late, every other worker takes note of a write
    // before it is answered: the first write after the freeze waits out the limit (1 s), as the worker
    // could have been about to answer; the ones after it do not wait for it. The primary counts each
    // write it held up. On SQLite a worker reads the file's own version on its next request: no write waits.
    const pks: number[] = [];
    for (let i = 0; i <= 3; i++) pks.push(await createOver(server, kept, `Frozen ${i}`));
    signal(frozen, 'SIGCONT');
    // Asked through the worker that stays, once the thawed one answers again (/metrics asks both).
    assert.equal(await writesHeldUp(server, kept), ctx.testStore.kind === 'postgres' ? 1 : 0);
    // Reads on connections of their own reach both workers. A worker just thawed may call itself
    // overloaded for a moment (the freeze looks like event-loop lag): a 503 is asked again, a stale list never.
    let served = 0;
    for (let attempt = 0; attempt < 100 && served < 4; attempt++) {
      const list = await answerWithin(30_000, send(`${server.url}/api/v1/shop/products`));
      if (list.status === 503) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      assert.deepEqual((list.json as Array<{ pk: number }>).map((p) => p.pk), pks);
      served += 1;
    }
    assert.equal(served, 4);
  });

  it('counts the rate limit across the workers, not once per worker', async (t) => {
    const server = await serveWithWorkers(t, { RATE_LIMIT: '5/minute' });
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push((await send(`${server.url}/api/v1/shop/products`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
  });

  it('keeps CHANGE_STREAMS_MAX for the service: the workers share it out', async (t) => {
    const server = await serveWithWorkers(t, { CHANGE_STREAMS_MAX: '2' });
    const streams: EventStreamClient[] = [];
    for (let i = 0; i < 5; i++) streams.push(await openEventStream(`${server.url}/api/v2/shop/changes`));
    t.after(() => streams.forEach((s) => s.close()));
    assert.deepEqual(streams.map((s) => s.status), [200, 200, 503, 503, 503]);
    assert.ok(streams.slice(2).every((s) => s.headers['retry-after'] === '1'));
    assert.equal(sample((await send(`${server.url}/metrics`)).text, 'catalogue_change_streams'), 2);
    // A stream that ends gives its room back, whichever worker held it.
    streams[0]!.close();
    await streams[0]!.ended;
    let reopened: EventStreamClient | undefined;
    for (let attempt = 0; attempt < 50 && reopened?.status !== 200; attempt++) {
      reopened?.close();
      await new Promise((resolve) => setTimeout(resolve, 20));
      reopened = await openEventStream(`${server.url}/api/v2/shop/changes`);
    }
    streams.push(reopened!);
    assert.equal(reopened!.status, 200);
  });

  it('replaces a worker that dies, says so in its log, and serves throughout', async (t) => {
    const server = await serveWithWorkers(t);
    const [victim] = workerPids(server);
    process.kill(victim!, 'SIGKILL');
    const line = await server.waitForLog(new RegExp(`^worker ${victim} ended \\(SIGKILL\\); starting another`));
    assert.equal(line.level, 50);
    for (let i = 0; i < 4; i++) assert.equal((await send(`${server.url}/healthz`)).status, 200);
    // The replacement listens, and /metrics counts it and the restart.
    await server.waitForLog((l) => l.msg?.startsWith('Server listening at ') === true && !workerPids(server).slice(0, 2).includes(l.pid!));
    const metrics = (await send(`${server.url}/metrics`)).text;
    assert.equal(sample(metrics, 'catalogue_workers'), 2);
    assert.equal(sample(metrics, 'catalogue_worker_restarts_total'), 1);
  });

  it('answers /readyz and /metrics with 503 within seconds while a worker does not answer, and 200 once it does', async (t) => {
    const server = await serveWithWorkers(t);
    const [frozen] = workerPids(server);
    process.kill(frozen!, 'SIGSTOP');
    t.after(() => {
      try {
        process.kill(frozen!, 'SIGCONT');
      } catch {
        // Ended with the service.
      }
    });
    for (const path of ['/readyz', '/metrics']) {
      // Two connections at once: the primary hands them to the workers in turn, so one reaches the
      // worker that still runs (the other waits for the frozen one). Its 503 comes when the question to
      // the frozen worker runs out of time (3 s); ten times that bounds an answer that never comes.
      const first = await answerWithin(30_000, Promise.race([send(`${server.url}${path}`), send(`${server.url}${path}`)]));
      assert.equal(first.status, 503, path);
      assert.equal(first.headers['retry-after'] !== undefined, true, path);
    }
    process.kill(frozen!, 'SIGCONT');
    assert.equal((await send(`${server.url}/readyz`)).status, 200);
    assert.equal((await send(`${server.url}/metrics`)).status, 200);
  });

  it('stops every worker on SIGTERM, finishing what is in flight, well within the 10 s', async (t) => {
    const server = await serveWithWorkers(t);
    const pids = workerPids(server);
    const { code } = await server.stop();
    // Status 0: every worker finished what it owed; one cut short by the time limit ends the service with 1.
    assert.equal(code, 0, server.stderr());
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `worker ${pid} still runs`);
  });

  it('on SIGTERM answers every create of a burst of connections the primary had taken but not yet handed over, and stores each 201', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    const server = await startWorkers(location, {});
    t.after(() => server.stop());
    await server.waitForLog((line) => line.msg?.startsWith('Server listening at ') === true && new Set(workerPids(server)).size === 2);
    const { hostname, port } = new URL(server.url);
    // 40 connections: a quiet machine takes 300 at once within the stop's accept wait, so this leaves
    // ten times that room for a busy one (how many a stop takes is a figure in docs/OPERATIONS.md).
    const barcodes = Array.from({ length: 40 }, () => uniqueBarcode());
    // Each connection sends one whole create at once; the stop comes the moment every create is with
    // the kernel, while the primary and the workers are still taking them.
    const written: Array<Promise<unknown>> = [];
    const answers = barcodes.map((barcode) => new Promise<string>((resolve) => {
      const body = JSON.stringify({ name: `Burst ${barcode}`, barcode, price: '1.00' });
      const socket = netConnect(Number(port), hostname, () => {
        written.push(new Promise((sent) => socket.write(`POST /api/v1/shop/product/ HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, sent)));
      });
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.once('close', () => resolve(text));
      socket.once('error', () => undefined);
    }));
    await passesWithin(30_000, async () => assert.equal(written.length, barcodes.length), 1);
    await Promise.all(written);
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr());
    const texts = await Promise.all(answers);
    const unanswered = texts.filter((text) => !text.startsWith('HTTP/1.1 '));
    assert.equal(unanswered.length, 0, `${unanswered.length} of ${texts.length} creates got no answer`);
    const created = barcodes.filter((_, i) => texts[i]!.startsWith('HTTP/1.1 201 '));
    const stored = new Set((await outsideSql<{ barcode: string }>(location, 'SELECT barcode FROM product')).map((row) => row.barcode));
    assert.deepEqual(created.filter((barcode) => !stored.has(barcode)), [], 'answered 201 but not stored');
  });
});

describe('WORKERS refusals', () => {
  before(() => ensureBuild());

  it('ends with exit status 1 and the worker\'s reason when the first worker cannot start, instead of starting workers forever', async () => {
    const result = await runServiceUntilExit({ WORKERS: '2', PORT: '0', DATABASE_URL: 'sqlite:/proc/no-such-dir/catalogue.db' }, 30_000);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^Cannot open the database sqlite:\/proc\/no-such-dir\/catalogue\.db: /m);
    assert.equal(result.stderr.match(/Cannot open the database/g)?.length, 1, result.stderr);
    assert.doesNotMatch(result.stdout, /starting another/);
  });

  it('ends the start with status 0 on SIGTERM before the workers listen, as one process does', async (t) => {
    const { location } = await sqliteLocation(t);
    const child = spawnChild({ WORKERS: '2', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: databaseUrl(location) });
    await firstWorker(child.process.pid!);
    child.process.kill('SIGTERM');
    const { code } = await child.exited;
    assert.equal(code, 0, child.stderr());
    assert.equal(child.stderr(), '');
  });

  it('ends the start with status 0 on a stop signal that comes while the service\'s modules still load', async (t) => {
    const { location } = await sqliteLocation(t);
    // Module hooks that hold the loading of Fastify (which every start loads) until the test has sent its
    // signal, and say when that loading begins: the signal comes at that point of the start, whatever the machine's speed.
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-loading-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const [loading, hooks, register] = [join(dir, 'loading'), join(dir, 'hooks.mjs'), join(dir, 'register.mjs')];
    writeFileSync(
      hooks,
      `import { writeFileSync } from 'node:fs';
      export async function load(url, context, next) {
        if (/\\/node_modules\\/fastify\\/fastify\\.js$/.test(url)) {
          writeFileSync(${JSON.stringify(loading)}, '');
          await new Promise((resolve) => setTimeout(resolve, 5000));
        }
        return next(url, context);
      }`,
    );
    // `module.register` works on every supported Node; Node 26 deprecates it (hence --no-deprecation
    // below) for `registerHooks`, which Node 20 lacks.
    writeFileSync(register, `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hooks).href)});`);
    for (const name of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      rmSync(loading, { force: true });
      const child = spawnChild({ WORKERS: '2', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: databaseUrl(location) }, ['--no-deprecation', '--import', pathToFileURL(register).href, join(ROOT, 'dist', 'server.js')]);
      await passesWithin(30_000, async () => assert.ok(existsSync(loading), 'Fastify is loading'), 10);
      child.process.kill(name);
      const { code, signal } = await child.exited;
      assert.deepEqual({ code, signal }, { code: 0, signal: null }, name);
      assert.equal(child.stderr(), '');
    }
  });

  it('ends with status 1 and one line on stderr when its first worker is killed before it listens', async (t) => {
    const { location } = await sqliteLocation(t);
    const child = spawnChild({ WORKERS: '2', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: databaseUrl(location) });
    process.kill(await firstWorker(child.process.pid!), 'SIGKILL');
    const { code } = await child.exited;
    assert.equal(code, 1);
    assert.equal(child.stderr(), 'The service could not start: its first worker was ended by SIGKILL before it listened.\n');
  });

  it('refuses more than one worker over a database in memory, saying why', async () => {
    const result = await runServiceUntilExit({ WORKERS: '2', PORT: '0', DATABASE_URL: 'sqlite::memory:' }, 30_000);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /WORKERS=2 is not valid with DATABASE_URL=sqlite::memory:: a database in memory belongs to one process/);
  });
});
