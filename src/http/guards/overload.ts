import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { HttpProblem } from '../contract/problem.js';
import { problemResponse } from '../contract/responses.js';

/**
 * What the service does when offered more than it can serve. Past these limits a request is answered
 * at once with a 503 problem document and `Retry-After`, instead of waiting its turn behind thousands
 * of others until its client gives up: the answer is short, and a load balancer or a till can go
 * elsewhere or come back.
 */
export const OVERLOAD = Object.freeze({
  /**
   * Mean delay of the event loop, sampled every `sampleMs`, past which new requests get a 503. A
   * second: every request already waits that long, and a shorter limit would also strike at the
   * pauses of start-up and of a busy shared machine.
   */
  maxEventLoopDelayMs: 1_000,
  sampleMs: 500,
  /** What a refused client is told to wait, in seconds. */
  retryAfterSeconds: 1,
  /**
   * Connections the operating system holds for the service before it accepts them (capped by the
   * kernel's `net.core.somaxconn`). Node's 511 overflowed under a burst of 2,000 connections, and
   * each connection dropped there waits a second or more for its client to try again; held here, it
   * is accepted in turn and answered (by a 503 when the service is overloaded).
   */
  listenBacklog: 4096,
});

/** Probes and metrics keep answering under load: an overloaded instance is alive and observable. */
const ALWAYS_SERVED = new Set(['/healthz', '/metrics']);

const OVERLOADED = problemResponse('The service is overloaded right now; nothing was done. Retry after the seconds in Retry-After.', {
  'Retry-After': Type.String({ description: 'Seconds to wait before retrying.', examples: [String(OVERLOAD.retryAfterSeconds)] }),
});

/**
 * Declares the overload answer on every route registered after it but the probes and metrics, so that
 * the document says what a client may meet; routes that already declare a 503 (the database's) keep
 * theirs, which has the same shape. The document is the same whether the refusal is on or not.
 */
export function declareOverloadAnswer(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (ALWAYS_SERVED.has(route.url)) return;
    const responses = route.schema?.response as Record<string, unknown> | undefined;
    if (responses !== undefined && !Object.hasOwn(responses, '503')) responses['503'] = OVERLOADED;
  });
}

/**
 * Refuses requests while the event loop is overloaded, and returns whether it would refuse one now.
 *
 * It refuses nothing until a sample taken wholly after the service listens is in: the samples under
 * way while it starts hold the pauses of starting (every route's schemas compiled), which on a busy
 * machine last seconds and are no overload. Counted, they made a service just started on a busy
 * machine refuse its first requests for half a second.
 */
export async function useOverloadRefusal(app: FastifyInstance): Promise<() => boolean> {
  let refusesFrom = Number.POSITIVE_INFINITY;
  app.addHook('onListen', (done) => {
    // The sample under way as it listens ends within one interval; the one after it is the first clean one.
    refusesFrom = performance.now() + 2 * OVERLOAD.sampleMs;
    done();
  });
  const refusing = (): boolean => performance.now() >= refusesFrom;
  await app.register(underPressure, {
    maxEventLoopDelay: OVERLOAD.maxEventLoopDelayMs,
    sampleInterval: OVERLOAD.sampleMs,
    // Called only while the last sample is over the limit.
    pressureHandler: async (request) => {
      if (ALWAYS_SERVED.has(request.routeOptions.url ?? '') || !refusing()) return;
      throw new HttpProblem(503, 'The service is overloaded right now; try again shortly.', {
        headers: { 'Retry-After': String(OVERLOAD.retryAfterSeconds) },
      });
    },
  });
  return () => app.isUnderPressure() && refusing();
}
