import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DatabaseLocation } from '../../src/config.js';

/** The service from its sources, as tests run it; a build runs as `[join(dist, 'server.js')]`. */
export const SERVER_SOURCE_ARGS: readonly string[] = Object.freeze(['--import', 'tsx', fileURLToPath(new URL('../../src/server.ts', import.meta.url))]);

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
}

export interface SpawnOptions {
  /** The program to run: this Node.js unless given (`npm`, for `npm start`). */
  readonly command?: string;
  readonly cwd?: string;
  /** In a process group of its own, so that a signal can reach the whole group (npm and the service). */
  readonly detached?: boolean;
  /** Another account to run as (a user and group id), for what root would not be refused. */
  readonly runAs?: RunAs;
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
  /** Resolves at the first log line whose message matches; rejects if the process ends first. */
  waitForLog(pattern: RegExp): Promise<LogLine>;
  /** Sends SIGTERM, then SIGKILL after a grace period, and resolves with how the process ended. */
  stop(): Promise<ChildExit>;
}

export interface ChildServer extends Child {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
}

/**
 * Spawns a Node.js program (the service unless `args` says otherwise) with `env` on top of the test's
 * environment, its output read line by line so that a full pipe never blocks it. Every test and the
 * bench start their processes here.
 */
export function spawnChild(env: Record<string, string | undefined>, args: readonly string[] = SERVER_SOURCE_ARGS, options: SpawnOptions = {}): Child {
  // The test runner marks its own child processes; the service is not one of its tests.
  const { NODE_TEST_CONTEXT: _runner, ...inherited } = process.env;
  const { command = process.execPath, cwd, detached = false, runAs } = options;
  const child = spawn(command, args, { cwd, detached, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...runAs });
  const logs: Child['logs'] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (entry: LogLine) => void }> = [];
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    // npm's own banner lines are not JSON; the service's log lines are.
    for (const line of lines.filter((l) => l.startsWith('{'))) {
      const entry = JSON.parse(line) as LogLine;
      logs.push(entry);
      for (const waiter of waiters.filter((w) => w.pattern.test(entry.msg ?? ''))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(entry);
      }
    }
  });
  const exited = new Promise<ChildExit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const waitForLog = (pattern: RegExp): Promise<LogLine> => {
    const seen = logs.find((entry) => pattern.test(entry.msg ?? ''));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      waiters.push({ pattern, resolve });
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
 * Starts the service as its own process on 127.0.0.1 and a port of the system's choosing, as an
 * operator would, and resolves once it listens (learning the port from Fastify's log line).
 * Settings are passed as environment variables.
 */
export async function spawnServer(env: Record<string, string>, args: readonly string[] = SERVER_SOURCE_ARGS): Promise<ChildServer> {
  const child = spawnChild({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, args);
  const listening = await child.waitForLog(/^Server listening at http:\/\/127\.0\.0\.1:\d+$/);
  return { ...child, url: listening.msg!.replace(/^Server listening at /, '') };
}

/** Runs the service expecting it to stop by itself (a start-up failure), and reports how it ended. */
export async function runServiceUntilExit(
  env: Record<string, string>,
  limitMs: number,
  runAs?: RunAs,
): Promise<{ code: number | null; stdout: string; stderr: string; elapsedMs: number }> {
  const started = performance.now();
  const child = spawnChild({ HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, SERVER_SOURCE_ARGS, { runAs });
  const timer = setTimeout(() => child.process.kill('SIGKILL'), limitMs);
  const { code } = await child.exited;
  clearTimeout(timer);
  return { code, stdout: child.stdout(), stderr: child.stderr(), elapsedMs: performance.now() - started };
}

/** The `DATABASE_URL` that names a location. */
export function databaseUrl(location: DatabaseLocation): string {
  return location.kind === 'sqlite' ? `sqlite:${location.path}` : location.url;
}
