import { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';

/**
 * Where a secret could sit in a log line; pino writes `[redacted]` instead. A request's own fields are
 * written by the `req` serializer below, which never writes its headers: paths under `req` would cost
 * every request line a pass of the redaction (some 8 % of a cached read's rate) to find nothing.
 */
const SECRET_PATHS = ['headers.authorization', 'headers.cookie'];

/** The message of the one line each answered request is logged with, routed or kept (kept-hits.ts). */
export const REQUEST_LINE = 'request completed';

/**
 * The server's JSON log settings. Each request is logged with its id, method, URL and client,
 * never its headers, so a token cannot reach a log.
 */
export function loggerOptions(level: string): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    redact: { paths: SECRET_PATHS, censor: '[redacted]' },
    serializers: {
      req: (request: Pick<FastifyRequest, 'method' | 'url' | 'host' | 'ip' | 'headers'>) => ({
        method: request.method,
        url: request.url,
        host: request.host,
        remoteAddress: request.ip,
        userAgent: request.headers['user-agent'],
      }),
    },
  };
}

/**
 * One line per request at LOG_LEVEL info where Fastify writes two (`incoming request`, then `request
 * completed`): the completed line carries the request's fields as well, so that nothing is lost but a
 * line, and a line is most of what a cached read costs beyond answering it (docs/PERFORMANCE.md). The
 * line of a request's arrival is still there at `debug`, for following a request that hangs. A request
 * whose client leaves before its answer is finished is logged by `logAbortedRequests`.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, REQUEST_LINE);
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
