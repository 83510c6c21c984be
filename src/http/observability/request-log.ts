import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { type LoggedRequest, REQUEST_LINE, type RequestFields, requestFields } from './logging.js';

/** What a line is written to: pino's destination, or a test's stream. */
interface LineStream {
  write(text: string): unknown;
}

/** A line waiting for the end of its turn: what its request left, which nothing changes afterwards. */
interface PendingLine {
  readonly time: number;
  readonly id: string;
  readonly req: RequestFields;
  readonly status: number;
  readonly responseTime: number;
}

/**
 * The one line each answered request is logged with, routed (logging.ts) or kept (kept-hits.ts),
 * from one place: pino's line, with the app logger's level, fields and destination, byte for byte what
 * `log.info({ reqId, req, res, responseTime }, 'request completed')` writes (the `req` serializer's
 * fields, the same order). It is written here rather than by pino, and the lines of one turn of the event
 * loop all at once as it ends: a line of its own, built by pino and written by itself, cost a cached
 * read more than answering it (0.55 × bare Fastify, where no line gives 0.97 ×); taken down in the turn
 * and written in one go after it, 0.68 × (docs/PERFORMANCE.md, "What a logged request costs"). The logger's
 * redaction is not run over it: it holds no header, which is where a secret could be (logging.ts).
 *
 * Every other line (a request's arrival at debug, one that failed or was aborted) is pino's, written at
 * once: a request's line can follow a later line of the same turn.
 */
export class RequestLog {
  readonly #logger: FastifyBaseLogger;
  readonly #stream: LineStream;
  /** `,"pid":…,"hostname":…` and any other field the logger carries on every line, as pino writes them. */
  readonly #bindings: string;
  readonly #level: number;
  /** The lines of this turn. */
  #pending: PendingLine[] = [];

  /** Over the app's logger, which must be pino's (Fastify's own, or one made from its options). */
  constructor(logger: FastifyBaseLogger) {
    const internals = logger as unknown as Record<symbol, unknown>;
    const stream = internals[pino.symbols.streamSym] as LineStream | undefined;
    const bindings = internals[pino.symbols.chindingsSym];
    if (stream === undefined || typeof bindings !== 'string') throw new Error('The request log needs a pino logger of the same pino as the service.');
    this.#logger = logger;
    this.#stream = stream;
    this.#bindings = bindings;
    this.#level = pino.levels.values.info!;
  }

  /** The line of a request's arrival, at LOG_LEVEL debug and below (a no-op above). */
  arrived(id: string, request: LoggedRequest): void {
    this.#logger.debug({ reqId: id, req: request }, 'incoming request');
  }

  /** The line of an answered request, written as this turn of the event loop ends. */
  completed(id: string, request: LoggedRequest, status: number, responseTime: number): void {
    if (this.#pending.length === 0) setImmediate(this.#flush);
    this.#pending.push({ time: Date.now(), id, req: requestFields(request), status, responseTime });
  }

  readonly #flush = (): void => {
    const pending = this.#pending;
    this.#pending = [];
    let text = '';
    for (const { time, id, req, status, responseTime } of pending) {
      text +=
        `{"level":${this.#level},"time":${time}${this.#bindings},"reqId":${JSON.stringify(id)},"req":${JSON.stringify(req)},` +
        `"res":{"statusCode":${status}},"responseTime":${responseTime},"msg":"${REQUEST_LINE}"}\n`;
    }
    this.#stream.write(text);
  };
}
