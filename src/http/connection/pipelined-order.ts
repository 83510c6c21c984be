import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { answerBeingWritten } from './node-internals.js';

/** Methods that change nothing: pipelined requests of these alone may be served side by side. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/** Per connection, the answers a later request may have to wait for. */
interface Answers {
  /** The answer of the request received last. */
  last: ServerResponse;
  /** The answer of the last request that may change something. */
  lastWrite: ServerResponse | undefined;
}

/**
 * Serves pipelined requests in the order a client sent them wherever one of them may change
 * something. Node reads a connection ahead and starts each request while the ones before it are still
 * being served (their answers still go out in order), which RFC 9112 §9.3.2 allows only for safe
 * methods: a read sent right behind a create on the same connection must see the product. So a
 * request waits until the answer before it is written when it may change something itself, and until
 * the last write's answer is written when it is a read. Answers on a connection finish in order, so
 * the one answer stands for all before it. Without pipelining nothing waits.
 *
 * A request behind an answer that closed the connection is not run at all (RFC 9112 §9.6: after a
 * close the server "MUST NOT process any further requests received on that connection"): Node reads
 * on while it drains a refused body, and would hand over a create sent behind it, to be stored and
 * never answered. A write waits for the answer just before it, so it always sees that close.
 */
export function usePipelinedOrder(app: FastifyInstance): void {
  const bySocket = new WeakMap<Socket, Answers>();
  // A callback hook, first of all: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket;
    const response = reply.raw;
    const safe = SAFE_METHODS.has(request.method);
    const answers = bySocket.get(socket);
    if (answers === undefined) {
      bySocket.set(socket, { last: response, lastWrite: safe ? undefined : response });
      return proceed(request, reply, done);
    }
    const before = safe ? answers.lastWrite : answers.last;
    answers.last = response;
    if (!safe) answers.lastWrite = response;
    if (before === undefined || before === response || before.writableFinished || before.destroyed) return proceed(request, reply, done);
    afterAnswer(before, () => proceed(request, reply, done));
  });
}

/**
 * Runs the request, unless its connection's end is written: no answer can follow that. An answer
 * being written ahead that no route made (the 417 to an `Expect`, which Node has sent from its own
 * event as the request was read) is not among those the hook follows: if it will close the connection,
 * it is waited for too, until its 'finish', where Node ends the connection (`writableFinished` may be
 * true before that: the bytes have left, the event has not come yet). A module function, not a
 * closure: it runs for every request.
 */
function proceed(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const socket = request.raw.socket;
  const response = reply.raw;
  if (!socket.writableEnded && !socket.destroyed) {
    const ahead = answerBeingWritten(socket);
    if (ahead === undefined || ahead === response || ahead.destroyed || !closes(ahead)) return done();
    return afterAnswer(ahead, () => proceed(request, reply, done));
  }
  request.log.info('not run: it came on its connection behind an answer that closed the connection');
  reply.hijack();
  done();
  answered(response);
}

/** Whether `answer` says it closes the connection once written. */
function closes(answer: ServerResponse): boolean {
  return /(?:^|,)\s*close\s*(?:,|$)/i.test(String(answer.getHeader('connection') ?? ''));
}

/** Per answer others wait for, what each of them will do once it is written: one listener, however many wait. */
const waiting = new WeakMap<ServerResponse, Array<() => void>>();

/**
 * Calls `then` once `answer` has been written or given up. Every request pipelined behind a write
 * waits for the same answer: a listener each would pass Node's limit (a warning from the 11th on).
 */
function afterAnswer(answer: ServerResponse, then: () => void): void {
  const queued = waiting.get(answer);
  if (queued !== undefined) {
    queued.push(then);
    return;
  }
  waiting.set(answer, [then]);
  answer.once('finish', () => answered(answer));
  answer.once('close', () => answered(answer));
}

/** Lets the requests waiting for `answer` go on: it has been written, given up, or will never be. */
function answered(answer: ServerResponse): void {
  const waiters = waiting.get(answer);
  waiting.delete(answer);
  for (const waiter of waiters ?? []) waiter();
}
