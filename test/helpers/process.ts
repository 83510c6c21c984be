import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STARTUP_LIMIT_MS = 30_000;

export interface ServiceProcess {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  /** Sends SIGTERM and waits for the process to end. */
  stop(): Promise<void>;
}

export interface ProcessExit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly elapsedMs: number;
}

/** Another account to run the service as: a user and group id. */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** Spawns `src/server.ts` as the service's own process would run, with `env` on top of the test's. */
function spawnServer(env: Record<string, string>, runAs?: RunAs): ChildProcess {
  // The test runner marks its own child processes; the service is not one of its tests.
  const { NODE_TEST_CONTEXT: _runner, ...inherited } = process.env;
  return spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: ROOT,
    env: { ...inherited, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...runAs,
  });
}

/**
 * Starts a real service process on a port of the system's choosing (PORT=0) and learns the port from
 * Fastify's "Server listening at" log line.
 */
export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawnServer({ ...env, PORT: '0' });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));

  const url = await new Promise<string>((resolve, reject) => {
    let pending = '';
    const timer = setTimeout(() => fail(new Error(`the service did not start within ${STARTUP_LIMIT_MS} ms`)), STARTUP_LIMIT_MS);
    const onExit = (code: number | null) => fail(new Error(`the service exited with ${code} before listening: ${stderr}`));
    function fail(error: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    child.once('exit', onExit);
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(pending);
      if (match === null) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(match[1]!);
    });
  });
  // Keep draining the log so that a full pipe never blocks the service.
  child.stdout!.resume();

  return {
    url,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs the service expecting it to stop by itself (a start-up failure), and reports how it ended. */
export async function runServiceUntilExit(env: Record<string, string>, limitMs: number, runAs?: RunAs): Promise<ProcessExit> {
  const started = performance.now();
  const child = spawnServer(env, runAs);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr, elapsedMs: performance.now() - started };
}
