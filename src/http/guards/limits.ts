import type { IncomingMessage } from 'node:http';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RateLimit } from '../../config.js';
import type { WorkerGroup } from '../../workers/worker-group.js';
import Type from 'typebox';
import { HttpProblem } from '../contract/problem.js';
import { problemResponse } from '../contract/responses.js';

/**
 * How long the server waits on a slow or silent client. They bound what a client that sends
 * nothing (or one byte a minute) can hold on to: sockets, memory, a database connection.
 */
export const TIMEOUTS = Object.freeze({
  /** The request line and headers must arrive within this time. */
  headersMs: 15_000,
  /** The whole request, body included, must arrive within this time. */
  requestMs: 30_000,
  /**
   * A socket with no traffic either way is closed after this time. One whose client stops taking an
   * answer midway is closed between one and two times this after the last bytes it took: Node's socket
   * timer, finding a write still pending that it has not seen before, waits once more.
   */
  idleSocketMs: 60_000,
  /**
   * An idle keep-alive connection is kept this long. Longer than the 60 s idle timeout of common
   * load balancers, so that they never send a request on a connection the service is closing.
   */
  keepAliveMs: 72_000,
  /** How often the header and request limits are checked: each strikes at most this late. */
  checkEveryMs: 500,
});

/** What a request log line and the rate limit read of a request, as Fastify's request gives them. */
export interface LimitedClient {
  readonly method: string;
  readonly url: string;
  readonly host: string;
  readonly ip: string | undefined;
  readonly headers: IncomingMessage['headers'];
  readonly socket: IncomingMessage['socket'];
}

/**
 * Counts a request answered before routing (kept-hits.ts) with the rate limit's own count: the headers
 * its answer carries, or `undefined` when it is over the limit and the routes must refuse it.
 */
export type CountRequest = (client: LimitedClient) => Promise<Record<string, string> | undefined>;

/**
 * Caps requests per client address and window. Clients over the cap get a 429 problem document
 * with `Retry-After` (seconds); every answer carries the `X-RateLimit-*` headers. With workers, the
 * requests are counted across all of them. Gives the count of a request answered before routing:
 * the same limiter and store, so that every request counts once.
 */
export async function useRateLimit(app: FastifyInstance, limit: RateLimit, workerGroup?: WorkerGroup): Promise<CountRequest> {
  // Every route limited from here on can answer 429; its documented answers say so.
  const tooMany = problemResponse(`More than ${limit.max} requests from this address in ${describeWindow(limit.windowMs)} (RATE_LIMIT).`, {
    'Retry-After': Type.String({ description: 'Seconds to wait before retrying.', examples: ['30'] }),
  });
  app.addHook('onRoute', (route) => {
    const responses = route.schema?.response as Record<string, unknown> | undefined;
    if (responses !== undefined && !Object.hasOwn(responses, '429')) responses['429'] = tooMany;
  });
  await app.register(rateLimit, {
    max: limit.max,
    timeWindow: limit.windowMs,
    ...(workerGroup === undefined ? {} : { store: sharedCounts(workerGroup) }),
    errorResponseBuilder: (_request, context) =>
      new HttpProblem(429, `Too many requests from this address: at most ${context.max} in ${describeWindow(limit.windowMs)}. Try again in ${context.after}.`, {
        headers: { 'Retry-After': String(Math.max(1, Math.ceil(context.ttl / 1000))) },
      }),
  });
  const count = app.createRateLimit();
  return async (client): Promise<Record<string, string> | undefined> => {
    // The limiter reads the client's address (its key) and the route's own limit, which no route sets.
    const counted = await count({ ip: client.ip, routeOptions: { config: {} } } as unknown as FastifyRequest);
    if (counted.isAllowed) return {};
    if (counted.isExceeded) return undefined;
    // The headers the limiter's hook puts on a routed answer under the limit.
    return {
      'x-ratelimit-limit': String(counted.max),
      'x-ratelimit-remaining': String(counted.remaining),
      'x-ratelimit-reset': String(counted.ttlInSeconds),
    };
  };
}

/**
 * @fastify/rate-limit's store interface over the counts the primary keeps for every worker. A count the
 * primary cannot give (it is gone, and this worker ends with it) refuses the request with a 503 and
 * Retry-After: the limit is never silently lifted.
 */
function sharedCounts(workerGroup: WorkerGroup) {
  return class SharedCounts {
    incr(key: string, callback: (error: Error | null, count?: { current: number; ttl: number }) => void, timeWindow: number, max: number): void {
      workerGroup.countRequest(key, timeWindow, max).then(
        (count) => callback(null, count),
        () => callback(new HttpProblem(503, 'The service cannot count this request against its rate limit now; try again in a moment.', { headers: { 'Retry-After': '1' } })),
      );
    }

    child(): SharedCounts {
      return this;
    }
  };
}

function describeWindow(ms: number): string {
  return ms === 1000 ? 'a second' : ms === 60_000 ? 'a minute' : 'an hour';
}
