import type { FastifyInstance } from 'fastify';

/**
 * A request asking to switch protocols (`Upgrade`: WebSocket, h2c) gets its ordinary answer, which
 * ends the connection. The service speaks HTTP/1.1 only and may ignore the ask (RFC 9110 §7.8), but
 * Node's parser reads nothing more of the bytes that came with such a request's head: a request
 * pipelined behind it would go unanswered on a connection left open until its idle limit. Closed, the
 * connection tells the client that what it sent behind went unanswered, to be sent again.
 */
export function useUpgradeIgnored(app: FastifyInstance): void {
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers.upgrade !== undefined) reply.header('Connection', 'close');
    done();
  });
}
