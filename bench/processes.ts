import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface Target {
  readonly label: string;
  readonly port: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** A port no one listens on right now (the child binds it a moment later). */
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

/** Starts a child that serves HTTP on `port` and resolves once it answers `readyPath`. */
export async function startTarget(label: string, port: number, args: readonly string[], env: NodeJS.ProcessEnv, readyPath: string): Promise<Target> {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`${label} ${exited} before it answered`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}${readyPath}`);
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`${label} did not answer within 60 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    label,
    port,
    child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Resident memory of a process and its descendants (cluster workers), in bytes, from /proc.
 * Returns 0 where /proc is not available.
 */
export function residentBytes(pid: number): number {
  let total = 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    if (match !== null) total += Number(match[1]) * 1024;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children === '' ? [] : children.split(/\s+/)) total += residentBytes(Number(child));
  } catch {
    // The process may have exited between two reads; what was read so far stands.
  }
  return total;
}

/** Samples a process's resident memory every `everyMs` until stopped; returns the peak. */
export function samplePeakRss(pid: number, everyMs = 50): { stop(): number } {
  let peak = residentBytes(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, residentBytes(pid));
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, residentBytes(pid));
    },
  };
}
