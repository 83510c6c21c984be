import type { IncomingHttpHeaders } from 'node:http';
import { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import type { RequestLog } from './request-log.js';

/**
 * Where a secret could sit in a log line; pino writes `[redacted]` instead. A request's own fields are
 * written by the `req` serializer below, which never writes its headers: paths under `req` would cost
 * every request line a pass of the redaction (some 8 % of a cached read's rate) to find nothing.
 */
const SECRET_PATHS = ['headers.authorization', 'headers.cookie'];

/** The message of the one line each answered request is logged with, routed or kept (kept-hits.ts). */
export const REQUEST_LINE = 'request completed';

/** What a log line says of a request (its `req` field), in this order. */
export type RequestFields = {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly remoteAddress: string | undefined;
  readonly userAgent: string | undefined;
};

/** What a request's log fields are read from: a routed request, or a kept answer's (kept-hits.ts). */
export interface LoggedRequest {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly ip: string | undefined;
  readonly headers: IncomingHttpHeaders;
}

/** A request's fields for its log lines: never its headers, so that a token cannot reach a log. */
export function requestFields(request: LoggedRequest): RequestFields {
  return { method: request.method, url: request.url, host: request.host, remoteAddress: request.ip, userAgent: request.headers['user-agent'] };
}

/**
 * The server's JSON log settings. Each request is logged with its id, method, URL and client,
 * never its headers, so a token cannot reach a log.
 */
export function loggerOptions(level: string): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    redact: { paths: SECRET_PATHS, censor: '[redacted]' },
    serializers: { req: requestFields },
  };
}

/**
 * One line per request at LOG_LEVEL info where Fastify writes two (`incoming request`, then `request
 * completed`): the completed line carries the request's fields as well, so that nothing is lost but a
 * line, and a line is most of what a cached read costs beyond answering it (docs/PERFORMANCE.md). The
 * line of a request's arrival is still there at `debug`, for following a request that hangs. A request
 * whose client leaves before its answer is finished is logged by `logAbortedRequests`. The completed
 * line is `RequestLog`'s (request-log.ts), which writes a kept answer's too.
 */
export class OneLinePerRequest extends LogController {
  /** Where the line of an answered request is written, once the app's logger is made; none above LOG_LEVEL info. */
  requestLog: RequestLog | undefined;

  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else this.requestLog?.completed(request.id, request, reply.statusCode, reply.elapsedTime);
  }

  // A client that leaves a streamed answer (the whole list, the change feed) is the request's
  // `request aborted` line; Fastify's own line for it would be a second line for one request.
  override streamError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if ((error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') reply.log.debug({ res: reply }, 'stream closed prematurely');
    else super.streamError(error, request, reply);
  }
}

/**
 * The line of a request whose client closed its connection before the answer was finished: with one
 * line per request, written when the answer is, such a request would otherwise leave none.
 */
export function logAbortedRequests(app: FastifyInstance): void {
  // Node forgets a connection's address once it is closed, unless it was read before: read here, it
  // is kept (net.Socket keeps what it read), so that the line of a request aborted later still has it.
  app.addHook('onRequest', (request, _reply, done) => {
    void request.socket?.remoteAddress;
    done();
  });
  app.addHook('onRequestAbort', async (request) => {
    request.log.info({ req: request }, 'request aborted');
  });
}
