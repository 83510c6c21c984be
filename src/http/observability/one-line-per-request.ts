import { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { RequestLog } from './request-log.js';

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
