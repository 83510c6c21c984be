import { type IncomingMessage, METHODS } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { answerBeingWritten, answerOnBareSocket } from './node-internals.js';
import { afterOwedAnswers } from './parser-refusals.js';

/**
 * Routes every method Node's HTTP parser lets through, so that each route can answer 405 to all of
 * them (Fastify routes only the common ones unless told), CONNECT included: Node hands a CONNECT to
 * the server's 'connect' listeners with the bare socket, as the start of a tunnel, and destroys the
 * socket unanswered when there is none. This service is no proxy: a CONNECT gets the answer its path
 * gives every method the path does not serve (a 405 with `Allow`, or a 404), with the usual headers,
 * and the connection is closed after it.
 */
export function useEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) {
    // What follows a CONNECT's head is the tunnel's data, not a body.
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: method !== 'CONNECT' });
  }
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    // Node no longer watches the socket: an error on it must not end the process.
    socket.on('error', () => socket.destroy());
    const answer = (): void => {
      if (socket.destroyed) return;
      try {
        const response = answerOnBareSocket(request, socket);
        response.shouldKeepAlive = false;
        response.once('finish', () => socket.destroySoon());
        app.server.emit('request', request, response);
      } catch {
        // Whatever Node's internals do next, a client's bytes must never end the process.
        socket.destroy();
      }
    };
    // Requests pipelined ahead of the CONNECT are owed their answers first: the socket is the
    // CONNECT's once they have finished (Node hands it from one answer to the next as each finishes).
    const before = answerBeingWritten(socket);
    if (before === undefined) answer();
    else afterOwedAnswers(socket, before, answer);
  });
}
