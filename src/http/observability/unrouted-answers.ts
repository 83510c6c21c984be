import type { LoggedRequest } from './logging.js';
import type { RequestLog } from './request-log.js';

/** The route label of an answer no route gave, in the metrics (a not-found path, a refusal before routing). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Answers written before any route or hook runs, where Fastify's own logging and counting never see
 * them: the router's refusal of a path (an over-long product pk) and the 417 to an `Expect` Node
 * checks first. Each is logged with the line a routed answer gets and counted in the metrics under
 * `unmatched`, as a request for a path that is nothing. Made before the app, since Fastify takes its
 * refusal handler when it is constructed; the request log and the counters are handed over once made.
 */
export class UnroutedAnswers {
  /** The app's request log, where every request is logged (LOG_LEVEL info and below). */
  requestLog: RequestLog | undefined;
  /** The metrics' counter of a method, status and route (metrics.ts). */
  counterOf: ((method: string, status: number, route: string) => (seconds: number) => void) | undefined;

  answered(id: string, request: LoggedRequest, status: number, milliseconds: number): void {
    this.requestLog?.completed(id, request, status, milliseconds);
    this.counterOf?.(request.method, status, UNMATCHED_ROUTE)(milliseconds / 1000);
  }
}
