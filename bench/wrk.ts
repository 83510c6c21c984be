import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { sampleUsage, type Usage } from './processes.js';

const SCRIPTS = join(import.meta.dirname, 'wrk');

export const WRK_MISSING = `wrk, the load generator, is not installed.
  Debian, Ubuntu: apt-get update && apt-get install -y wrk
  macOS:          brew install wrk`;

/** wrk's version line, or `undefined` when it is not on the PATH. */
export function wrkVersion(): string | undefined {
  const probe = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (probe.error !== undefined) return undefined;
  return /wrk (\S+)/.exec(probe.stdout)?.[1] ?? 'unknown version';
}

export interface ErrorCounts {
  /** Answers with a status of 400 or more, as wrk counts them. */
  readonly status: number;
  readonly connect: number;
  readonly read: number;
  readonly write: number;
  /** Requests not answered within wrk's `--timeout`. */
  readonly timeout: number;
}

export interface LoadResult extends Usage {
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: ErrorCounts;
}

export interface Load {
  readonly port: number;
  /** The target's process, whose memory and CPU are sampled meanwhile. */
  readonly pid: number;
  readonly threads: number;
  readonly connections: number;
  readonly seconds: number;
  readonly headers: Readonly<Record<string, string>>;
  /** `paths.lua` or `create.lua`, with its arguments. */
  readonly script: 'paths' | 'create';
  readonly args: readonly string[];
}

/** A whole catalogue of a million products takes seconds to stream: slow, not failed. */
const TIMEOUT_SECONDS = 30;

const running = new Set<ChildProcess>();

/** Stops every wrk still running, when the bench is interrupted. */
export function stopLoads(): void {
  for (const child of running) child.kill('SIGKILL');
}

/** Runs wrk once against a target; resolves with its counts once it exits, rejects when it fails. */
export function runWrk(load: Load): Promise<LoadResult> {
  const args = [
    `--threads=${load.threads}`,
    `--connections=${load.connections}`,
    `--duration=${load.seconds}s`,
    `--timeout=${TIMEOUT_SECONDS}s`,
    ...Object.entries(load.headers).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
    `--script=${join(SCRIPTS, `${load.script}.lua`)}`,
    `http://127.0.0.1:${load.port}`,
    '--',
    ...load.args,
  ];
  return new Promise((resolve, reject) => {
    // From the scripts' folder, so that they find their shared `report.lua` with `require`.
    const child = spawn('wrk', args, { cwd: SCRIPTS, stdio: ['ignore', 'pipe', 'pipe'] });
    const usage = sampleUsage(load.pid, child.pid!);
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.once('error', (error) => {
      running.delete(child);
      usage.stop();
      reject(error);
    });
    child.once('close', (code, signal) => {
      running.delete(child);
      const used = usage.stop();
      const line = /^bench-result (.*)$/m.exec(stdout)?.[1];
      if (code !== 0 || line === undefined) {
        reject(new Error(`wrk ${args.join(' ')} ended with ${signal ?? code}:\n${(stderr + stdout).trim()}`));
        return;
      }
      const r = JSON.parse(line) as Record<string, number>;
      const at = (name: string): number => r[name] ?? 0;
      resolve({
        ...used,
        requests: at('requests'),
        requestsPerSecond: at('requests') / (at('duration_us') / 1e6),
        p50Ms: at('p50_us') / 1000,
        p99Ms: at('p99_us') / 1000,
        errors: { status: at('status'), connect: at('connect'), read: at('read'), write: at('write'), timeout: at('timeout') },
      });
    });
  });
}

export function errorTotal(errors: ErrorCounts): number {
  return errors.status + errors.connect + errors.read + errors.write + errors.timeout;
}
