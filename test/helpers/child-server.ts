import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { DatabaseLocation } from '../../src/config.js';
import { ensureBuild } from './build.js';
import { send } from './http.js';

/**
 * The service as `npm start` runs it, its build (ensureBuild): a service process the tests start loads
 * the bundle in a fraction of the time that tsx takes to load the sources, which counts with a process
 * per worker and a few hundred starts a run. The tests that build the app in their own process run
 * the sources.
 */
export const SERVICE_ARGS: readonly string[] = Object.freeze([fileURLToPath(new URL('../../dist/server.js', import.meta.url))]);

/** How long a stopped child may take to finish its requests before it is killed. */
const STOP_GRACE_MS = 15_000;

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface LogLine {
  readonly msg?: string;
  readonly level?: number;
  readonly pid?: number;
  /** The request a request's line is about (`request completed`; at LOG_LEVEL debug, `incoming request`). */
  readonly req?: { readonly method?: string; readonly url?: string };
}

export interface SpawnOptions {
  /** The program to run: this Node.js unless given (`npm`, for `npm start`). */
  readonly command?: string;
  readonly cwd?: string;
  /** In a process group of its own, so that a signal can reach the whole group (npm and the service). */
  readonly detached?: boolean;
  /** Another account to run as (a user and group id), for what root would not be refused. */
  readonly runAs?: RunAs;
  /**
   * Its standard output sent nowhere instead of read (its log lines then neither kept nor waited for):
   * a load run at LOG_LEVEL info writes two lines a request, which this process would otherwise parse.
   */
  readonly discardStdout?: boolean;
}

/** Another account to run the service as: a user and group id. */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

export interface Child {
  readonly process: ChildProcess;
  /** Every JSON line written to standard output so far (the service's log); other lines are left out. */
  readonly logs: LogLine[];
  /** Standard output and standard error so far. */
  readonly stdout: () => string;
  readonly stderr: () => string;
  /**
   * Resolves when the process has ended and its output is closed, with its exit code (null when
   * killed by a signal) and signal.
   */
  readonly exited: Promise<ChildExit>;
  /**
   * Resolves at the first log line whose message matches `pattern` (or that `pattern` accepts), logged
   * so far or later; rejects if the process ends first.
   */
  waitForLog(pattern: RegExp | ((line: LogLine) => boolean)): Promise<LogLine>;
  /** Sends SIGTERM, then SIGKILL after a grace period, and resolves with how the process ended. */
  stop(): Promise<ChildExit>;
}

export interface ChildServer extends Child {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
}

/**
 * Spawns a Node.js program (the service unless `args` says otherwise) with `env` on top of the test's
 * environment (a variable given as `undefined` is left out), its output read line by line so that a
 * full pipe never blocks it. Every process the tests start is started here (Chromium aside, which
 * Playwright starts): a long-running one directly, a one-shot command through `runCommand`.
 */
export function spawnChild(env: Record<string, string | undefined>, args: readonly string[] = SERVICE_ARGS, options: SpawnOptions = {}): Child {
  // The test runner marks its own child processes; the service is not one of its tests.
  const { NODE_TEST_CONTEXT: _runner, ...inherited } = process.env;
  const { command = process.execPath, cwd, detached = false, runAs, discardStdout = false } = options;
  const child = spawn(command, args, { cwd, detached, env: { ...inherited, ...env }, stdio: ['ignore', discardStdout ? 'ignore' : 'pipe', 'pipe'], ...runAs });
  const logs: Child['logs'] = [];
  const waiters: Array<{ matches: (entry: LogLine) => boolean; resolve: (entry: LogLine) => void }> = [];
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    // npm's own banner lines, or a command's output, are no log lines; the service's are JSON objects.
    for (const entry of lines.map(logLine).filter((e) => e !== undefined)) {
      logs.push(entry);
      for (const waiter of waiters.filter((w) => w.matches(entry))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(entry);
      }
    }
  });
  const exited = new Promise<ChildExit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const waitForLog = (pattern: RegExp | ((line: LogLine) => boolean)): Promise<LogLine> => {
    const matches = typeof pattern === 'function' ? pattern : (entry: LogLine) => pattern.test(entry.msg ?? '');
    const seen = logs.find(matches);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      waiters.push({ matches, resolve });
      void exited.then(({ code, signal }) => reject(new Error(`the process ended (${signal ?? code}) before logging ${pattern}: ${stderr}`)));
    });
  };
  const stop = async (): Promise<ChildExit> => {
    if (child.exitCode === null && child.signalCode === null) {
      const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      child.kill('SIGTERM');
      await exited.finally(() => clearTimeout(kill));
    }
    return exited;
  };
  return { process: child, logs, stdout: () => stdout, stderr: () => stderr, exited, waitForLog, stop };
}

/**
 * How many processes a service the tests start serves with, unless a test says: one, or the suite's
 * `TEST_WORKERS` (CI runs the HTTP suite once with `TEST_WORKERS=2`).
 */
export const TEST_WORKERS = process.env.TEST_WORKERS?.trim() || '1';

/**
 * Starts the service as its own process on 127.0.0.1 and a port of the system's choosing, as an
 * operator would, and resolves once it serves (learning the address from its `serving at` line, which
 * comes when every worker listens). Settings are passed as environment variables.
 */
export async function spawnServer(env: Record<string, string>, args: readonly string[] = SERVICE_ARGS): Promise<ChildServer> {
  await ensureBuild();
  const child = spawnChild({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', WORKERS: TEST_WORKERS, ...env }, args);
  return { ...child, url: await servingAt(child) };
}

/** A port no process listens on right now (a child binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the service with `LOG_LEVEL=warn`, as a quiet deployment runs it (kept answers are then
 * written before routing), on a port chosen here. It logs no `serving at` line to wait for: it is
 * ready once `/healthz` answers and, with workers, once `/metrics` counts every one of them listening
 * (at most 30 s).
 */
export async function spawnQuietServer(env: Record<string, string>): Promise<ChildServer> {
  await ensureBuild();
  const port = await freePort();
  const fullEnv = { HOST: '127.0.0.1', WORKERS: TEST_WORKERS, ...env, PORT: String(port), LOG_LEVEL: 'warn' };
  const child = spawnChild(fullEnv);
  const url = `http://127.0.0.1:${port}`;
  const workers = Number(fullEnv.WORKERS);
  const ready = async (): Promise<boolean> => {
    const answer = await send(`${url}${workers > 1 ? '/metrics' : '/healthz'}`).catch(() => undefined);
    if (answer?.status !== 200) return false;
    return workers > 1 ? new RegExp(`^catalogue_workers ${workers}$`, 'm').test(answer.text) : true;
  };
  const until = Date.now() + 30_000;
  while (!(await ready())) {
    if (Date.now() > until || child.process.exitCode !== null) {
      await child.stop();
      throw new Error(`the service was not ready within 30 s: ${child.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { ...child, url };
}

/** The address in the service's `serving at URL with ...` line, once it has logged it. */
export async function servingAt(child: Child): Promise<string> {
  const serving = await child.waitForLog(/^serving at http:\/\/127\.0\.0\.1:\d+ with /);
  return /^serving at (\S+) with /.exec(serving.msg!)![1]!;
}

/**
 * Accepts the log line of a `method` request whose head has arrived: its body may still be on its way.
 * The service writes it at LOG_LEVEL debug only.
 */
export function requestArrived(method: string): (line: LogLine) => boolean {
  return (line) => line.msg === 'incoming request' && line.req?.method === method;
}

/** A line of standard output as a log line, or undefined when it is not one (not a JSON object). */
function logLine(line: string): LogLine | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null ? (parsed as LogLine) : undefined;
  } catch {
    return undefined;
  }
}

/** How a one-shot command ended, and everything it wrote. */
export interface CommandResult {
  /** The exit status; null when a signal ended the process. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions extends SpawnOptions {
  /** How long the command may run: it is killed then, and the run fails saying so. One minute unless told. */
  readonly timeoutMs?: number;
}

/**
 * Runs a one-shot command to its end (the `catalogue` command, `npm`, a script, a shell line: Node.js
 * with `args` unless `options.command` names another program) with `env` on top of the test's
 * environment, and resolves with its exit status and output, whatever the status. A command still
 * running after `timeoutMs` is killed, and the run rejects with what it wrote so far.
 */
export async function runCommand(env: Record<string, string | undefined>, args: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  const { timeoutMs = 60_000, ...spawnOptions } = options;
  const child = spawnChild(env, args, spawnOptions);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.process.kill('SIGKILL');
  }, timeoutMs);
  const { code } = await child.exited.finally(() => clearTimeout(timer));
  if (timedOut) {
    const command = [spawnOptions.command ?? 'node', ...args].join(' ');
    throw new Error(`${command} did not end within ${timeoutMs} ms.\nstdout: ${child.stdout()}\nstderr: ${child.stderr()}`);
  }
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

/** Runs the service expecting it to stop by itself (a start-up failure) within `limitMs`, and reports how it ended. */
export async function runServiceUntilExit(env: Record<string, string>, limitMs: number, runAs?: RunAs): Promise<CommandResult & { elapsedMs: number }> {
  const started = performance.now();
  await ensureBuild();
  const result = await runCommand({ HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, SERVICE_ARGS, { timeoutMs: limitMs, runAs });
  return { ...result, elapsedMs: performance.now() - started };
}

/** The `DATABASE_URL` that names a location. */
export function databaseUrl(location: DatabaseLocation): string {
  return location.kind === 'sqlite' ? `sqlite:${location.path}` : location.url;
}
