import { type IncomingMessage, METHODS, STATUS_CODES, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { type AnswerHeaders, requestId } from './answer-headers.js';
import { PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from './problem.js';

/**
 * Every method Node's HTTP parser lets through, so that each route can answer 405 to all of them
 * (Fastify routes only the common ones unless told). CONNECT reaches the routes through
 * `useConnectAnswers`.
 */
export const EXTRA_HTTP_METHODS: readonly string[] = METHODS;

/**
 * Routes a CONNECT like any other request, so that it gets the answer its path gives every method the
 * path does not serve (a 405 with `Allow`, or a 404), with the usual headers. Node hands a CONNECT to
 * the server's 'connect' listeners with the bare socket, as the start of a tunnel, and destroys the
 * socket unanswered when there is none. This service is no proxy: it answers once and closes.
 */
export function useConnectAnswers(app: FastifyInstance): void {
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    // Node no longer watches the socket: an error on it must not end the process.
    socket.on('error', () => socket.destroy());
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket);
    response.once('finish', () => socket.destroySoon());
    app.server.emit('request', request, response);
  });
}

/** The 417's detail: it names no part of the caller's header, which could be anything. */
const EXPECTATION_FAILED = 'The Expect header asks for what this service does not do; the one expectation it meets is 100-continue.';

/**
 * Answers an `Expect` other than `100-continue` alone (RFC 9110 §10.1.1) with a 417 problem document
 * instead of Node's empty 417, with the headers every answer carries; the connection is closed after
 * it, as the body that may follow is not read. Node checks `Expect` before any route or hook sees the
 * request, and takes for 100-continue any value that merely contains it (`100-continue, foo`, or two
 * `Expect` headers, which it joins): such a value asks for more than 100-continue, so it is a 417 too.
 *
 * `100-continue` itself is no longer answered by Node at once: the request goes on without it, and
 * `useContinueWhenRead` sends `100 Continue` only when the body is about to be read. A final answer
 * sent without it closes the connection (Node does so for a request that expected 100 and did not
 * get it), since the client may send the body anyway or skip it, and neither can be told apart from
 * a next request.
 */
export function useExpectationRefusal(app: FastifyInstance, headers: AnswerHeaders): void {
  const refuse = (request: IncomingMessage, response: ServerResponse): void => {
    const body = JSON.stringify(problemBody(417, EXPECTATION_FAILED));
    headers.write(requestId(request), request.headers.origin, (name, value) => response.setHeader(name, value));
    response.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
    response.setHeader('Content-Length', Buffer.byteLength(body));
    response.setHeader('Connection', 'close');
    response.writeHead(417).end(body);
  };
  app.server.on('checkExpectation', refuse);
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers.expect?.trim().toLowerCase() !== '100-continue') {
      refuse(request, response);
      return;
    }
    awaitingContinue.add(response);
    app.server.emit('request', request, response);
  });
}

/** Answers to a request that expects `100 Continue` and has not had it yet. */
const awaitingContinue = new WeakSet<ServerResponse>();

/** Methods whose body Fastify never reads (its bodyless ones, and CONNECT as registered in app.ts). */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE', 'CONNECT']);

/**
 * Sends `100 Continue` to a request that expects it just before its body is read: on a route that
 * reads bodies, for the one media type the service parses, and a `Content-Length` within the limit.
 * A request refused on its head (405, 415, 413, 404, 401, 429...) gets its final answer without the
 * 100, so the client is not invited to upload into a refusal. Register before the routes.
 */
export function useContinueWhenRead(app: FastifyInstance, mediaType: string, bodyLimit: number): void {
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('preParsing', (request, reply, payload, done) => {
    const response = reply.raw;
    if (!awaitingContinue.has(response)) return done(null, payload);
    awaitingContinue.delete(response);
    const length = request.headers['content-length'];
    const read =
      !request.is404 &&
      !BODYLESS_METHODS.has(request.method) &&
      request.mediaType === mediaType &&
      (length === undefined || Number(length) <= bodyLimit);
    if (read) response.writeContinue();
    return done(null, payload);
  });
}

/**
 * Fastify's own answers to a path it cannot decode (`%ZZ`) or to an over-long path parameter, as
 * problem documents. Neither path can name a product, so both are a 404.
 */
export function frameworkErrors(headers: AnswerHeaders): NonNullable<FastifyServerOptions['frameworkErrors']> {
  return (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // The router refused the request before any hook ran.
    headers.apply(request, reply);
    sendProblem(reply, 404, 'There is nothing at this address: its path is not a valid URL path.');
  };
}

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request (an unknown method, a broken
 * header, headers too large, a request too slow) with a problem document, then closes the connection.
 *
 * The parser reads ahead: bytes that follow a complete request on the same connection are parsed
 * while that request is still being served. Its answer is owed first, so the refusal waits until it
 * has been written (or given up).
 */
export function clientErrorHandler(headers: AnswerHeaders): (error: ParserError, socket: Socket) => void {
  const refused = new WeakSet<Socket>();
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed || refused.has(socket)) return;
    refused.add(socket);
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const pending = (socket as SocketWithResponse)._httpMessage ?? undefined;
    const refuse = (): void => {
      // An answer already under way cannot be followed by another in the middle of it.
      if (socket.writable && (pending === undefined || !pending.headersSent || pending.writableFinished)) {
        socket.write(refusal(status, headers.rawLines(Buffer.isBuffer(error.rawPacket) ? error.rawPacket : undefined)));
      }
      socket.destroy();
    };
    // Only a request received in full is owed its answer first; an error about the request itself
    // (its body too slow, say) is the answer.
    if (pending === undefined || pending.writableFinished || !pending.req.complete) {
      refuse();
      return;
    }
    // Nothing more is read: the parser has failed, and whatever else comes is not a request.
    socket.pause();
    afterOwedAnswers(socket, pending, refuse);
  };
}

/**
 * Calls `then` once every answer owed on the connection has been written (or given up): `answer`,
 * and each answer of a pipelined request received in full behind it, which Node hands the socket
 * when the one before it finishes.
 */
function afterOwedAnswers(socket: SocketWithResponse, answer: ServerResponse, then: () => void): void {
  let done = false;
  const next = (): void => {
    if (done) return;
    done = true;
    // Node detaches an answer from the socket when its 'finish' runs, so one still attached has not
    // finished, even if all its bytes are already written: wait for it too.
    const following = socket._httpMessage ?? undefined;
    if (following !== undefined && following !== answer && following.req.complete && !socket.destroyed) {
      afterOwedAnswers(socket, following, then);
    } else {
      then();
    }
  };
  answer.once('finish', next);
  answer.once('close', next);
}

/**
 * Node keeps the answer being written on a connection here (internal, but stable since Node 0.x);
 * it is how Node itself decides whether a parser error may still be answered.
 */
type SocketWithResponse = Socket & { _httpMessage?: ServerResponse | null };

/** Node's parser error carries the bytes it was parsing (a Buffer, whatever Fastify's types say). */
type ParserError = NodeJS.ErrnoException & { readonly rawPacket?: unknown };

/** The refusal as written to the socket, with the header lines every answer carries. */
function refusal(status: number, everyAnswer: string): string {
  const detail =
    status === 408
      ? 'The request took too long to arrive.'
      : status === 431
        ? 'The request headers are too large.'
        : 'The request is not valid HTTP/1.1 (for example an unknown method or a malformed header).';
  const body = JSON.stringify(problemBody(status, detail));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${everyAnswer}Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}
