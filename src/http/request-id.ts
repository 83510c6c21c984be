import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';

/** What a caller's own id may look like; anything else could forge or flood log lines. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's id: the caller's `X-Request-Id` when it is sane (so a proxy's id follows the request
 * through), otherwise a new UUID.
 */
export function requestId(request: IncomingMessage): string {
  const given = request.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && SANE_ID.test(given) ? given : randomUUID();
}

/** Returns the id on every answer, errors included, so a caller can quote it. */
export function useRequestIdHeader(app: FastifyInstance): void {
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
}

type FrameworkErrors = NonNullable<FastifyServerOptions['frameworkErrors']>;

/** Fastify's refusals before routing skip every hook; this puts the id on them too. */
export function withRequestId(answer: FrameworkErrors): FrameworkErrors {
  return (error, request, reply) => {
    reply.header('X-Request-Id', request.id);
    return answer(error, request, reply);
  };
}
