import { type IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

// The only file that names what Node's HTTP server keeps to itself: fields and calls it uses
// internally, stable for many releases but neither documented nor typed. Each use falls back to
// something quietly worse if Node changes it (a pipelined 201 lost, a CONNECT left unanswered), so
// `checkNodeInternals()` tests all of them and test/http/node-internals.test.ts runs it on every
// supported Node: a release that changes one fails there, loudly, not in a shop.

/** Node keeps the answer being written on a connection here; it is how Node itself decides whether a parser error may still be answered. */
type SocketWithAnswer = Socket & { _httpMessage?: ServerResponse | null };

/** The answer the connection is writing or will write next, if any. */
export function answerBeingWritten(socket: Socket): ServerResponse | undefined {
  return (socket as SocketWithAnswer)._httpMessage ?? undefined;
}

/**
 * Makes the server finish the answers it owes when a client ends its side of the connection right
 * after its requests (`nc -N`, scripts that have nothing more to say), instead of dropping the
 * requests still in flight, whose products may already be stored. It is the server's own flag, set
 * in its constructor from an option Fastify does not pass, and missing from Node's typings.
 */
export function finishAnswersAfterClientEnds(server: Server): void {
  (server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
}

/**
 * An answer to a request Node handed over with its bare socket (a CONNECT), written to that socket
 * like any other: Node's own constructor and `assignSocket`, which its server calls for every request.
 */
export function answerOnBareSocket(request: IncomingMessage, socket: Socket): ServerResponse {
  const response = new ServerResponse(request);
  response.assignSocket(socket);
  return response;
}

/**
 * Has Node's server close `socket` through `close` after an answer that says `Connection: close`,
 * instead of its own `destroySoon`, which drops the socket as soon as its end is out.
 */
export function closeThrough(socket: Socket, close: () => void): void {
  // Typed, but undocumented: that Node's server closes a connection through it is what this relies on.
  socket.destroySoon = close;
}

/**
 * What is wrong with the internals above on this Node, one line each; empty when all hold. Checked on
 * a server that is not listening and a socket that is not connected: nothing is sent.
 */
export function checkNodeInternals(server: Server, request: IncomingMessage, socket: Socket): string[] {
  const problems: string[] = [];
  if (typeof (socket as { destroySoon?: unknown }).destroySoon !== 'function') problems.push('socket.destroySoon is gone, which Node\'s server calls to close a connection after an answer that says close');
  const flag = (server as { httpAllowHalfOpen?: unknown }).httpAllowHalfOpen;
  if (typeof flag !== 'boolean') problems.push(`server.httpAllowHalfOpen is ${typeof flag}, not the boolean Node's server reads when a client ends its side`);
  if (typeof (ServerResponse.prototype as { assignSocket?: unknown }).assignSocket !== 'function') problems.push('ServerResponse.prototype.assignSocket is gone');
  else {
    const response = answerOnBareSocket(request, socket);
    if (answerBeingWritten(socket) !== response) problems.push('socket._httpMessage does not hold the answer assigned to the socket');
    response.detachSocket(socket);
    if (answerBeingWritten(socket) !== undefined) problems.push('socket._httpMessage still holds an answer after it was detached');
  }
  return problems;
}
