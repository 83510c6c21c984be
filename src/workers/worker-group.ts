import cluster from 'node:cluster';
import type { WriteKind, WriteNotices } from '../storage/store.js';
import { ANSWER_WITHIN_MS, answerQuestion, isAnswer, isQuestion, Questions, sendOver } from './asking.js';

/** The primary asks every worker in turn: it gets longer than one worker does. */
const PRIMARY_ANSWERS_WITHIN_MS = ANSWER_WITHIN_MS + 1000;

/**
 * How long the primary waits for each other worker to take note of a write before the writer answers:
 * a worker frozen or far behind does not hold every write up for longer.
 */
export const WRITE_NOTICE_WITHIN_MS = 1_000;

/** A client's requests in the current window, as @fastify/rate-limit's stores report them. */
export interface RateCount {
  readonly current: number;
  readonly ttl: number;
}

/** What a worker is asked by the primary, answered by the part of the app that knows. */
export interface WorkerAnswers {
  /** This worker's metrics, as prom-client's `getMetricsAsJSON`. */
  metrics(): Promise<unknown>;
  /** Resolves when this worker's database answers. */
  ready(): Promise<void>;
  /**
   * Gives back up to `bytes` of this worker's share of the change streams' memory, for another
   * worker's streams; returns the bytes given back.
   */
  shedStreamBytes(bytes: number): number;
}

/**
 * The worker processes that serve one port together (`WORKERS`), as one of them sees them: what must
 * hold for the whole service rather than per process is asked of the primary, which asks every worker.
 */
export interface WorkerGroup {
  /** How many workers serve the port; a limit meant for the whole service is shared out by it. */
  readonly size: number;
  /** Every worker's metrics added up, with the primary's own, as Prometheus text. */
  metrics(): Promise<string>;
  /** Resolves when every worker's database answers; rejects with the first failure. */
  ready(): Promise<void>;
  /** Counts a request of `key` in the window, across every worker (the primary keeps the counts). */
  countRequest(key: string, windowMs: number, max: number): Promise<RateCount>;
  /**
   * Takes one of the service's `max` change streams for this worker, when fewer are open across the
   * workers; false when all are taken. `releaseStream` gives it back.
   */
  claimStream(max: number): Promise<boolean>;
  releaseStream(): void;
  /**
   * Takes `bytes` of the change streams' memory `budget` for this worker, when the workers' streams
   * hold less than that (the primary asks the worker holding most to give some back first); false
   * when the budget is spent. `releaseStreamBytes` gives them back.
   */
  claimStreamBytes(bytes: number, budget: number): Promise<boolean>;
  releaseStreamBytes(bytes: number): void;
  /** This worker's writes told to the others, and theirs heard, through the primary. */
  readonly writeNotices: WriteNotices;
  /** Lets the primary ask this worker for its own part of the answers above. */
  answerWith(answers: WorkerAnswers): void;
}

/**
 * This process's place in its group, when the primary started it as a worker; `undefined` when it
 * serves alone.
 */
export function joinWorkerGroup(size: number): WorkerGroup | undefined {
  if (!cluster.isWorker) return undefined;
  // A worker always has its channel to the primary: `process.send` is there.
  const send = sendOver(process as { send: NonNullable<NodeJS.Process['send']> });
  const questions = new Questions(send);
  const notices = new WorkerWriteNotices((kind) => questions.ask('write-committed', { kind }, WRITE_NOTICE_WITHIN_MS + 1000));
  let answers: WorkerAnswers | undefined;
  process.on('message', (message: unknown) => {
    if (isAnswer(message)) questions.settle(message);
    else if (isQuestion(message)) {
      answerQuestion(message, async (what, args) => {
        if (what === 'write-heard') {
          notices.hear((args as { kind?: WriteKind } | undefined)?.kind);
          return 'heard';
        }
        if (answers === undefined) throw new Error('this worker is still starting');
        if (what === 'metrics') return answers.metrics();
        if (what === 'ready') return answers.ready();
        if (what === 'shed-stream-bytes') return answers.shedStreamBytes((args as { bytes: number }).bytes);
        throw new Error(`no such question: ${what}`);
      }, send);
    }
  });
  process.once('disconnect', () => questions.failAll('the primary process is gone'));
  return {
    size,
    metrics: async () => String(await questions.ask('metrics', undefined, PRIMARY_ANSWERS_WITHIN_MS)),
    ready: async () => {
      await questions.ask('ready', undefined, PRIMARY_ANSWERS_WITHIN_MS);
    },
    countRequest: async (key, windowMs, max) => (await questions.ask('count-request', { key, windowMs, max })) as RateCount,
    claimStream: async (max) => (await questions.ask('claim-stream', { max })) === true,
    releaseStream: () => {
      // Nothing to wait for; a primary that is gone has nothing left to count.
      questions.ask('release-stream').catch(() => undefined);
    },
    // The primary may ask another worker to give some back first: that takes longer than one answer.
    claimStreamBytes: async (bytes, budget) => (await questions.ask('claim-stream-bytes', { bytes, budget }, PRIMARY_ANSWERS_WITHIN_MS)) === true,
    releaseStreamBytes: (bytes) => {
      questions.ask('release-stream-bytes', { bytes }).catch(() => undefined);
    },
    writeNotices: notices,
    answerWith: (given) => {
      answers = given;
    },
  };
}

/**
 * A worker's side of the write notices: its writes told to the primary, which tells every other worker
 * and answers once each has taken note; theirs counted as they arrive. Writes that commit while a
 * notice is on its way share the next one, so that a burst of creates costs a few round trips, not
 * one each.
 */
export class WorkerWriteNotices implements WriteNotices {
  readonly #tell: (kind: WriteKind) => Promise<unknown>;
  #heard = 0;
  #heardChanges = 0;
  #sending: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  /** The kind the next notice tells of: `changes` when any write waiting for it may have changed a product. */
  #nextKind: WriteKind = 'adds';

  constructor(tell: (kind: WriteKind) => Promise<unknown>) {
    this.#tell = tell;
  }

  heard(): number {
    return this.#heard;
  }

  heardChanges(): number {
    return this.#heardChanges;
  }

  hear(kind: WriteKind | undefined): void {
    this.#heard += 1;
    // Anything but a known `adds` (a primary of another version) is taken as a change.
    if (kind !== 'adds') this.#heardChanges += 1;
  }

  announce(kind: WriteKind): Promise<void> {
    if (this.#sending === undefined) return (this.#sending = this.#send(kind));
    // This write may have committed after the notice on its way left: it waits for the next one,
    // which tells of the writes waiting for it together.
    if (kind === 'changes') this.#nextKind = kind;
    return (this.#next ??= this.#sending.then(() => {
      const next = this.#nextKind;
      this.#next = undefined;
      this.#nextKind = 'adds';
      return this.announce(next);
    }));
  }

  async #send(kind: WriteKind): Promise<void> {
    try {
      await this.#tell(kind);
    } catch {
      // The primary gone or too slow: the write stands, and the database's own notice follows.
    } finally {
      this.#sending = undefined;
    }
  }
}
