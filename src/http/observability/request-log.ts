import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { type LoggedRequest, REQUEST_LINE, requestFields } from './logging.js';

/** What a line is written to: pino's destination, or a test's stream. */
interface LineStream {
  write(text: string): unknown;
}

/** The values of one line waiting for the end of its turn, in `RequestLog.#pending`. */
const VALUES_PER_LINE = 5;

/**
 * The one line each answered request is logged with, routed (logging.ts) or kept (kept-hits.ts),
 * from one place: pino's line, with the app logger's level, fields and destination, byte for byte what
 * `log.info({ reqId, req, res, responseTime }, 'request completed')` writes (the `req` serializer's
 * fields, the same order). It is written here rather than by pino, and the lines of one turn of the event
 * loop all at once as it ends: a line of its own, built by pino and written by itself, cost a cached
 * read more than answering it (0.54 × the rate of the same build at LOG_LEVEL warn, docs/PERFORMANCE.md,
 * "What a logged request costs"); taken down in the turn and written in one go after it, some 0.8 ×.
 * What a request leaves for its line is its values, which nothing changes afterwards. The logger's
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
  /** The lines of this turn, VALUES_PER_LINE values each: time, request id, the request's fields, status, response time. */
  #pending: unknown[] = [];

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
    this.#pending.push(Date.now(), id, requestFields(request), status, responseTime);
  }

  readonly #flush = (): void => {
    const pending = this.#pending;
    this.#pending = [];
    let text = '';
    for (let i = 0; i < pending.length; i += VALUES_PER_LINE) {
      text +=
        `{"level":${this.#level},"time":${pending[i] as number}${this.#bindings},"reqId":${JSON.stringify(pending[i + 1])},` +
        `"req":${JSON.stringify(pending[i + 2])},"res":{"statusCode":${pending[i + 3] as number}},"responseTime":${pending[i + 4] as number},"msg":"${REQUEST_LINE}"}\n`;
    }
    this.#stream.write(text);
  };
}
