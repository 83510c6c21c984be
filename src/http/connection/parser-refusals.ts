import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { AnswerHeaders } from '../contract/answer-headers.js';
import { HttpProblem, PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from '../contract/problem.js';
import { absoluteTarget, unnamedHost } from '../guards/request-address.js';
import { closeLingering } from './linger.js';
import { answerBeingWritten } from './node-internals.js';
import type { UnroutedAnswers } from '../observability/unrouted-answers.js';

/**
 * Fastify's own answers to a path it cannot decode (`%ZZ`) or to an over-long path parameter, as
 * problem documents. Neither path can name a product, so both are a 404, logged and counted as one.
 * An absolute-form target whose host is no host (`http://shop.example:99999/...`) reaches the router
 * as a path it cannot read; it is the 400 that such a target gets on every route.
 */
export function frameworkErrors(headers: AnswerHeaders, unrouted: UnroutedAnswers): NonNullable<FastifyServerOptions['frameworkErrors']> {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // The router refused the request before any hook ran: none logs or counts it.
    const started = performance.now();
    headers.apply(request, reply);
    const problem = !request.url.startsWith('/') && absoluteTarget(request.url) === undefined ? unnamedHost() : new HttpProblem(404, `There is nothing at this address: ${UNREAD_PATHS[error.code] ?? UNREAD_PATHS['FST_ERR_BAD_URL']}`);
    sendProblem(reply, problem.status, problem.message);
    unrouted.answered(request.id, request, problem.status, performance.now() - started);
  };
}

/** Why the router reads no route from a path, by its error's code. */
const UNREAD_PATHS: Readonly<Record<string, string>> = {
  FST_ERR_BAD_URL: 'its path is not valid percent-encoding of UTF-8 text.',
  FST_ERR_MAX_PARAM_LENGTH: 'a part of its path is longer than any this service reads (200 characters).',
};

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request (an unknown method, a broken
 * header, headers too large, a request too slow) with a problem document, then closes the connection.
 *
 * The parser reads ahead: bytes that follow a complete request on the same connection are parsed
 * while that request is still being served. Its answer is owed first, so the refusal waits until it
 * has been written (or given up). Each refusal is a line of the request log (`request refused`), with
 * the id its answer carries: no route saw the request, and yet a client may quote that id.
 */
export function clientErrorHandler(headers: AnswerHeaders): (this: FastifyInstance, error: ParserError, socket: Socket) => void {
  const refused = new WeakSet<Socket>();
  return function refuseRequest(this: FastifyInstance, error, socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed || refused.has(socket)) return;
    refused.add(socket);
    const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const pending = answerBeingWritten(socket);
    const log = this.log;
    const refuse = (): void => {
      // Bytes that follow an answer that closed the connection: its close is under way, lingering
      // (linger.ts), and dropping the connection now would reset it under that answer.
      if (!socket.writable) return;
      // An answer already under way cannot be followed by another in the middle of it.
      if (pending === undefined || !pending.headersSent || pending.writableFinished) {
        const { id, lines } = headers.rawLines(Buffer.isBuffer(error.rawPacket) ? error.rawPacket : undefined);
        // Read before the socket is destroyed: Node forgets the address of a closed connection it was not asked for.
        const remoteAddress = socket.remoteAddress;
        socket.write(refusal(status, error.code, lines));
        log.info({ reqId: id, client: { remoteAddress }, res: { statusCode: status }, reason: error.code }, 'request refused');
        closeLingering(socket);
        return;
      }
      socket.destroy();
    };
    // Only a request received in full is owed its answer first; an error about the request itself
    // (its body too slow, say) is the answer. An answer still on the socket has not run its 'finish',
    // even when its bytes are all written (an answer ended at once, kept-hits.ts): the pipelined
    // answers behind it are handed the socket only then, so the refusal waits for it too.
    if (pending === undefined || !pending.req.complete) {
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
export function afterOwedAnswers(socket: Socket, answer: ServerResponse, then: () => void): void {
  let done = false;
  const next = (): void => {
    if (done) return;
    done = true;
    // Node detaches an answer from the socket when its 'finish' runs, so one still attached has not
    // finished, even if all its bytes are already written: wait for it too.
    const following = answerBeingWritten(socket);
    if (following !== undefined && following !== answer && following.req.complete && !socket.destroyed) {
      afterOwedAnswers(socket, following, then);
    } else {
      then();
    }
  };
  answer.once('finish', next);
  answer.once('close', next);
}

/** Node's parser error carries the bytes it was parsing (a Buffer, whatever Fastify's types say). */
type ParserError = NodeJS.ErrnoException & { readonly rawPacket?: unknown };

/** The refusal as written to the socket, with the header lines every answer carries. */
function refusal(status: number, code: string | undefined, everyAnswer: string): string {
  const detail =
    status === 408
      ? 'The request took too long to arrive.'
      : status === 431
        ? 'The request headers are too large.'
        : code === 'HPE_INVALID_URL'
          ? 'The request target holds a character a URL may not (a space, a control character or a byte outside ASCII); percent-encode it (é as %C3%A9).'
          : 'The request is not valid HTTP/1.1 (for example an unknown method or a malformed header).';
  const body = JSON.stringify(problemBody(status, detail));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${everyAnswer}Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}
