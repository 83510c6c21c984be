import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

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
      return done();
    }
    const before = safe ? answers.lastWrite : answers.last;
    answers.last = response;
    if (!safe) answers.lastWrite = response;
    if (before === undefined || before === response || before.writableFinished || before.destroyed) return done();
    afterAnswer(before, () => done());
  });
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
  const release = (): void => {
    const waiters = waiting.get(answer);
    waiting.delete(answer);
    for (const waiter of waiters ?? []) waiter();
  };
  answer.once('finish', release);
  answer.once('close', release);
}
