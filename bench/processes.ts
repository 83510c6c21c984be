import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort, spawnChild } from '../test/helpers/child-server.js';
import { send } from './client.js';

export { freePort };

export interface Target {
  readonly label: string;
  readonly port: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a child that serves HTTP on `port` and resolves once it answers anything at `/`: the
 * baselines write no log line to wait for. `env` is laid over this process's environment; a setting
 * given as `undefined` is left out. Its standard output (the service's log lines: two a request at
 * LOG_LEVEL info) goes to /dev/null: writing them is measured, not what a log collector does with them.
 */
export async function startTarget(label: string, port: number, args: readonly string[], env: Record<string, string | undefined>): Promise<Target> {
  const target = spawnChild(env, args, { discardStdout: true });
  let exited: string | undefined;
  void target.exited.then(({ code, signal }) => {
    exited = `exited with ${signal ?? code}: ${target.stderr()}`;
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`${label} ${exited} before it answered`);
    try {
      await send(port, { method: 'GET', path: '/' });
      break;
    } catch {
      if (Date.now() > deadline) {
        target.process.kill('SIGKILL');
        throw new Error(`${label} did not answer within 60 s`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { label, port, child: target.process, stop: async () => void (await target.stop()) };
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

/**
 * CPU seconds (user and system) a process and its descendants (`alone`: the process alone) have used
 * so far; 0 without /proc.
 */
export function cpuSeconds(pid: number, alone = false): number {
  return cpuTicks(pid, alone) / clockTicks();
}

function cpuTicks(pid: number, alone: boolean): number {
  let ticks = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may hold spaces: state is the 3rd field, utime the 14th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
    if (alone) return ticks;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children === '' ? [] : children.split(/\s+/)) ticks += cpuTicks(Number(child), false);
  } catch {
    // As for memory: what was read before the process exited stands.
  }
  return ticks;
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

export interface Usage {
  /** The target's peak resident memory while sampled, in bytes. */
  readonly peakRss: number;
  /** CPU the target used, in cores (1 = one core busy all the time). */
  readonly targetCpu: number;
  /** CPU the load generator used, in cores. */
  readonly loadCpu: number;
}

/**
 * Samples a target's memory and a load generator's CPU every `everyMs` while the load runs. The
 * load generator exits at the end, so its CPU is its last reading before that.
 */
export function sampleUsage(targetPid: number, loadPid: number, everyMs = 50): { stop(): Usage } {
  const started = performance.now();
  const targetCpuBefore = cpuSeconds(targetPid);
  let peak = residentBytes(targetPid);
  let loadCpu = 0;
  let loadSampledAt = started;
  const sample = (): void => {
    peak = Math.max(peak, residentBytes(targetPid));
    const cpu = cpuSeconds(loadPid);
    if (cpu >= loadCpu) {
      loadCpu = cpu;
      loadSampledAt = performance.now();
    }
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      const wall = (performance.now() - started) / 1000;
      return {
        peakRss: Math.max(peak, residentBytes(targetPid)),
        targetCpu: (cpuSeconds(targetPid) - targetCpuBefore) / wall,
        loadCpu: loadCpu / Math.max((loadSampledAt - started) / 1000, 1e-3),
      };
    },
  };
}
