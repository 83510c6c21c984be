import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { AnswerHeaders } from '../contract/answer-headers.js';
import { BODY_LIMIT_BYTES, JSON_MEDIA_TYPE } from '../guards/json-body.js';
import type { UnroutedAnswers } from '../observability/unrouted-answers.js';
import { useEveryMethod } from './connect.js';
import { useExpectations } from './expect-continue.js';
import { lingerOnEveryClose } from './linger.js';
import { finishAnswersAfterClientEnds } from './node-internals.js';
import { clientErrorHandler, frameworkErrors } from './parser-refusals.js';
import { usePipelinedOrder } from './pipelined-order.js';
import { useUnreadBodyLimit } from './unread-bodies.js';
import { useUpgradeIgnored } from './upgrade.js';

// What happens below the routes, on the connection: requests Node's parser or Fastify's router refuse
// before any route sees them, the order of pipelined requests, every method and CONNECT, `Expect`,
// `Upgrade`, bodies nobody reads, a client that ends its side early; and, in stop.ts, the stop. Routes never deal with any of it.

/** Fastify's options for the refusals made before any route runs, each a problem document with the headers every answer carries. */
export function connectionRefusals(headers: AnswerHeaders, unrouted: UnroutedAnswers): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler'> {
  return { frameworkErrors: frameworkErrors(headers, unrouted), clientErrorHandler: clientErrorHandler(headers) };
}

/** Everything else on the connection: register before the routes (its hooks act on routes added after them). */
export function useConnectionHandling(app: FastifyInstance, headers: AnswerHeaders, unrouted: UnroutedAnswers): void {
  usePipelinedOrder(app);
  finishAnswersAfterClientEnds(app.server);
  lingerOnEveryClose(app.server);
  useEveryMethod(app);
  useUnreadBodyLimit(app);
  useExpectations(app, headers, JSON_MEDIA_TYPE, BODY_LIMIT_BYTES, unrouted);
  useUpgradeIgnored(app);
}
