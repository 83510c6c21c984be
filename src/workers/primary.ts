import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import LocalStore from '@fastify/rate-limit/store/LocalStore.js';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import { answerQuestion, isAnswer, isQuestion, Questions, sendOver } from './asking.js';
import { WRITE_NOTICE_WITHIN_MS, type RateCount } from './worker-group.js';
import { workerExecArgv } from './worker-heap.js';

/** A worker that ends sooner than this after its start is failing to start: its next one waits. */
const EARLY_EXIT_MS = 5000;
/** The longest wait before starting a worker again after failed starts (it doubles from one second). */
const LONGEST_RESTART_WAIT_MS = 30_000;

export interface PrimaryOptions {
  /** How many workers serve the port. */
  readonly workers: number;
  readonly log: Logger;
  /** How long the workers get to finish their requests after a stop signal, as one process does. */
  readonly stopGraceMs: number;
}

export interface Primary {
  /**
   * Resolves with the address once every worker listens; rejects when a worker ends before any has
   * listened (its own output says why), having stopped the others.
   */
  readonly started: Promise<string>;
  /** Stops every worker (each finishes its requests in flight); resolves with the exit status the service should end with. */
  stop(signal: NodeJS.Signals): Promise<number>;
}

/** The first worker ended before it listened; `message` says why where the worker itself could not. */
export class StartFailure extends Error {
  constructor(readonly reason: string | undefined) {
    super(reason ?? 'the first worker ended before it listened');
    this.name = 'StartFailure';
  }
}

interface Member {
  readonly worker: Worker;
  readonly questions: Questions;
  readonly startedAt: number;
  listening: boolean;
  /**
   * It let a notice of a write go unanswered past the limit (frozen, say) and has answered nothing
   * since: it is still told of writes, but no writer waits for it.
   */
  unanswering: boolean;
  /** Change streams this worker holds open (CHANGE_STREAMS_MAX is the service's, shared by all). */
  streams: number;
  /** Bytes of the change streams' memory budget (CHANGE_STREAMS_MEMORY_MB, the service's) this worker holds. */
  streamBytes: number;
}

/**
 * Starts and keeps `workers` processes serving one port (Node's cluster: the primary accepts each
 * connection and hands it to the workers in turn). A worker that ends is logged and replaced; the
 * primary keeps what must hold across all of them: the rate limit's counts and the change streams'
 * count and memory, and it gathers every worker's metrics and readiness.
 */
export function startPrimary({ workers, log, stopGraceMs }: PrimaryOptions): Primary {
  cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, process.env['NODE_OPTIONS']) });
  const members = new Map<number, Member>();
  // The rate limit's own in-process store, kept here once for every worker, so that a client's requests
  // count against one limit whichever worker serves them.
  const rateCounts = new LocalStore(false, false);
  const registry = new Registry();
  new Gauge({
    name: 'catalogue_workers',
    help: 'Worker processes serving the port now (WORKERS).',
    registers: [registry],
    collect() {
      this.set([...members.values()].filter((m) => m.listening).length);
    },
  });
  const restarts = new Counter({ name: 'catalogue_worker_restarts_total', help: 'Workers that ended unasked and were replaced.', registers: [registry] });
  const writesHeldUp = new Counter({
    name: 'catalogue_writes_held_by_workers_total',
    help: 'Writes whose answer waited the whole limit (1 s) for another worker to take note of them: that worker was frozen or overloaded.',
    registers: [registry],
  });

  let stopping = false;
  let everListened = false;
  let startFailed = false;
  let failedStarts = 0;
  let address = '';
  let resolveStarted!: (address: string) => void;
  let rejectStarted!: (error: Error) => void;
  const started = new Promise<string>((resolve, reject) => {
    resolveStarted = resolve;
    rejectStarted = reject;
  });
  let stopped: Promise<number> | undefined;

  const askAll = async (what: string): Promise<unknown[]> =>
    Promise.all(
      [...members.values()]
        .filter((m) => m.listening)
        .map((m) => m.questions.ask(what).catch((error: unknown) => {
          // Named as the worker's error was, so that its kind reaches whoever asked the primary.
          const named = error instanceof Error ? { name: error.name } : {};
          throw Object.assign(new Error(`worker ${m.worker.process.pid}: ${error instanceof Error ? error.message : String(error)}`), named);
        })),
    );

  /**
   * Tells a worker of a write and resolves once it has taken note, or after the limit. A worker that
   * let the last notice go past the limit is told without waiting, so that a frozen worker holds up one
   * round of writes, not every write until it thaws. It stays exact all the same: the notice reaches it
   * on the channel that hands it its connections, ahead of any connection handed to it later.
   */
  const tellOfWrite = async (member: Member, kind: unknown): Promise<void> => {
    const heard = member.questions.ask('write-heard', { kind }, WRITE_NOTICE_WITHIN_MS);
    if (member.unanswering) {
      heard.catch(() => undefined);
      return;
    }
    await heard.catch(() => {
      member.unanswering = true;
      writesHeldUp.inc();
    });
  };

  const answer = async (what: string, args: unknown, from: Member): Promise<unknown> => {
    if (what === 'metrics') {
      const perWorker = await askAll('metrics');
      const summed = AggregatorRegistry.aggregate(perWorker as object[]);
      return (await summed.metrics()) + (await registry.metrics());
    }
    if (what === 'ready') {
      if (stopping) throw new Error('the service is stopping');
      await askAll('ready');
      return 'ready';
    }
    if (what === 'write-committed') {
      // Every other worker takes note before the writer answers: the database's own notice of the write
      // can come after its client has asked again, through another worker.
      // A worker still starting has served nothing, so it holds nothing to empty; asked, it could not
      // answer before its code is loaded, and every write would wait out the limit meanwhile.
      const others = [...members.values()].filter((m) => m !== from && m.listening);
      const { kind } = (args ?? {}) as { kind?: unknown };
      await Promise.all(others.map((member) => tellOfWrite(member, kind)));
      return 'heard';
    }
    if (what === 'count-request') {
      const { key, windowMs, max } = args as { key: string; windowMs: number; max: number };
      return new Promise<RateCount>((resolve, reject) => rateCounts.incr(key, (error, count) => (error ? reject(error) : resolve(count)), windowMs, max));
    }
    if (what === 'claim-stream') {
      const { max } = args as { max: number };
      const open = [...members.values()].reduce((sum, m) => sum + m.streams, 0);
      if (open >= max) return false;
      from.streams += 1;
      return true;
    }
    if (what === 'release-stream') {
      from.streams = Math.max(0, from.streams - 1);
      return 'released';
    }
    if (what === 'claim-stream-bytes') {
      const { bytes, budget } = args as { bytes: number; budget: number };
      const missing = (): number => [...members.values()].reduce((sum, m) => sum + m.streamBytes, 0) + bytes - budget;
      // Room is made where the most is held: that worker gives back what its streams do not use, then
      // closes those whose clients have been behind longest. The asker does so itself when it holds most.
      const fullest = [...members.values()].filter((m) => m !== from && m.listening).sort((a, b) => b.streamBytes - a.streamBytes)[0];
      if (missing() > 0 && fullest !== undefined && fullest.streamBytes >= from.streamBytes) {
        const given = await fullest.questions.ask('shed-stream-bytes', { bytes: missing() }).catch(() => 0);
        fullest.streamBytes = Math.max(0, fullest.streamBytes - Number(given));
      }
      if (missing() > 0) return false;
      from.streamBytes += bytes;
      return true;
    }
    if (what === 'release-stream-bytes') {
      from.streamBytes = Math.max(0, from.streamBytes - (args as { bytes: number }).bytes);
      return 'released';
    }
    throw new Error(`no such question: ${what}`);
  };

  const fork = (): void => {
    const worker = cluster.fork();
    const send = sendOver(worker);
    const member: Member = { worker, questions: new Questions(send), startedAt: Date.now(), listening: false, unanswering: false, streams: 0, streamBytes: 0 };
    members.set(worker.id, member);
    worker.on('message', (message: unknown) => {
      // Any message, even a late answer to a question given up on, shows the worker runs again.
      member.unanswering = false;
      if (isAnswer(message)) member.questions.settle(message);
      else if (isQuestion(message)) answerQuestion(message, (what, args) => answer(what, args, member), send);
    });
    // What Node's cluster itself reports on a worker (its own messages, a kill that failed): the worker's
    // end, if it comes, is handled on 'exit'; unheard, the event would end the primary and every worker.
    worker.on('error', (error) => log.error(`worker ${worker.process.pid}: ${error.message}`));
    worker.on('listening', ({ address: host, port }) => {
      member.listening = true;
      failedStarts = 0;
      address = `http://${host?.includes(':') ? `[${host}]` : host}:${port}`;
      if (!everListened) {
        everListened = true;
        // The first worker has run the migrations (if any); the others start beside each other.
        if (!stopping) for (let i = 1; i < workers; i += 1) fork();
      }
      if ([...members.values()].filter((m) => m.listening).length === workers) resolveStarted(address);
    });
    worker.on('exit', (code, signal) => {
      members.delete(worker.id);
      member.questions.failAll('the worker has ended');
      if (stopping) return;
      if (!everListened) {
        startFailed = true;
        // A worker that exits with a status has said why on stderr; one ended by a signal could not.
        rejectStarted(new StartFailure(signal === null ? undefined : `The service could not start: its first worker was ended by ${signal} before it listened.`));
        void stop('SIGTERM');
        return;
      }
      restarts.inc();
      const early = Date.now() - member.startedAt < EARLY_EXIT_MS;
      failedStarts = early ? failedStarts + 1 : 0;
      const waitMs = failedStarts === 0 ? 0 : Math.min(LONGEST_RESTART_WAIT_MS, 1000 * 2 ** (failedStarts - 1));
      log.error(`worker ${worker.process.pid} ended (${signal ?? `exit status ${code}`}); starting another${waitMs === 0 ? '' : ` in ${waitMs / 1000} s`}`);
      setTimeout(() => {
        if (!stopping) fork();
      }, waitMs);
    });
  };

  const stop = (signal: NodeJS.Signals): Promise<number> => {
    stopped ??= new Promise<number>((resolve) => {
      stopping = true;
      if (everListened) log.info(`${signal} received; stopping the workers`);
      let status = 0;
      const remaining = new Set(members.values());
      // A stop before any worker listens ends the start, with status 0, as one process's does.
      if (remaining.size === 0) resolve(startFailed ? 1 : 0);
      const killer = setTimeout(() => {
        log.error('workers did not stop in time; killing them');
        for (const member of remaining) member.worker.process.kill('SIGKILL');
      }, stopGraceMs + 1000);
      for (const member of remaining) {
        member.worker.once('exit', (code) => {
          // A worker still starting had nothing to finish: the signal may end it before its handlers are set.
          if (code !== 0 && member.listening) status = 1;
          remaining.delete(member);
          if (remaining.size > 0) return;
          clearTimeout(killer);
          resolve(startFailed ? 1 : status);
        });
        // Ctrl-C reaches every process of the group already; a second signal is harmless to a stopping worker.
        member.worker.process.kill('SIGTERM');
      }
    });
    return stopped;
  };

  fork();
  return { started, stop };
}
