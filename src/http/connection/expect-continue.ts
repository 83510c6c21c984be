import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { type AnswerHeaders, requestId } from '../contract/answer-headers.js';
import { hasUnknownCodings } from '../guards/json-body.js';
import { PROBLEM_CONTENT_TYPE, problemBody } from '../contract/problem.js';
import type { UnroutedAnswers } from '../observability/unrouted-answers.js';

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
function useExpectationRefusal(app: FastifyInstance, headers: AnswerHeaders, unrouted: UnroutedAnswers): void {
  const refuse = (request: IncomingMessage, response: ServerResponse): void => {
    const started = performance.now();
    const id = requestId(request);
    const body = JSON.stringify(problemBody(417, EXPECTATION_FAILED));
    headers.write(id, request.headers.origin, (name, value) => response.setHeader(name, value));
    response.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
    response.setHeader('Content-Length', Buffer.byteLength(body));
    response.setHeader('Connection', 'close');
    response.writeHead(417).end(body);
    // No route sees the request, and yet it was answered: its line and count, as a routed request's.
    const { method = 'GET', url = '', headers: fields } = request;
    unrouted.answered(id, { method, url, host: fields.host, ip: request.socket.remoteAddress, headers: fields }, 417, performance.now() - started);
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
 * reads bodies, for the one media type the service parses, in no coding it refuses, and a
 * `Content-Length` within the limit.
 * A request refused on its head (405, 415, 413, 404, 401, 429...) gets its final answer without the
 * 100, so the client is not invited to upload into a refusal. Register before the routes.
 */
function useContinueWhenRead(app: FastifyInstance, mediaType: string, bodyLimit: number): void {
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
      !hasUnknownCodings(request) &&
      (length === undefined || Number(length) <= bodyLimit);
    if (read) response.writeContinue();
    return done(null, payload);
  });
}

/**
 * `Expect` handled as RFC 9110 §10.1.1 asks: a 417 problem document for any expectation but
 * `100-continue`, and `100 Continue` sent only when the body is about to be read. Register before
 * the routes.
 */
export function useExpectations(app: FastifyInstance, headers: AnswerHeaders, mediaType: string, bodyLimit: number, unrouted: UnroutedAnswers): void {
  useExpectationRefusal(app, headers, unrouted);
  useContinueWhenRead(app, mediaType, bodyLimit);
}
