import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DatabaseLocation } from '../../src/config.js';

const SERVER = fileURLToPath(new URL('../../src/server.ts', import.meta.url));

export interface ChildServer {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  readonly process: ChildProcess;
  /** Every JSON log line written so far. */
  readonly logs: Array<{ msg?: string; level?: number }>;
  /** Resolves when the process has ended, with its exit code (null when killed by a signal) and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything written to standard error so far. */
  readonly stderr: () => string;
  /** Resolves at the first log line whose message matches. */
  waitForLog(pattern: RegExp): Promise<void>;
}

/**
 * Starts `src/server.ts` as its own process (port 0, on 127.0.0.1), as an operator would, and resolves
 * once it listens. Settings are passed as environment variables.
 */
export function spawnServer(env: Record<string, string>): Promise<ChildServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: ChildServer['logs'] = [];
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  let stderr = '';
  let buffered = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      if (line.trim() === '') continue;
      const entry = JSON.parse(line) as { msg?: string };
      logs.push(entry);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(entry.msg ?? '')) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitForLog = (pattern: RegExp): Promise<void> =>
    logs.some((entry) => pattern.test(entry.msg ?? ''))
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          waiters.push({ pattern, resolve });
          void exited.then(({ code }) => reject(new Error(`server exited (${code}) before logging ${pattern}: ${stderr}`)));
        });

  return waitForLog(/^Server listening at http:\/\/127\.0\.0\.1:/).then(() => {
    const listening = logs.find((entry) => /^Server listening at/.test(entry.msg ?? ''))!;
    const url = listening.msg!.replace(/^Server listening at /, '');
    return { url, process: child, logs, exited, waitForLog, stderr: () => stderr };
  });
}

/** The `DATABASE_URL` that names a location. */
export function databaseUrl(location: DatabaseLocation): string {
  return location.kind === 'sqlite' ? `sqlite:${location.path}` : location.url;
}
