import cors from '@fastify/cors';
import type { FastifyInstance, FastifyReply } from 'fastify';

export interface CorsSettings {
  readonly origin: '*' | readonly string[];
  /** Request headers a browser may send cross-origin. */
  readonly allowedHeaders: readonly string[];
}

export const CORS_METHODS = 'GET, POST, OPTIONS';

/**
 * Answer headers a cross-origin page may read besides the basic ones: where a created product is,
 * the validator for conditional requests, the request id to quote, and when to retry.
 */
export const EXPOSED_HEADERS = ['Location', 'ETag', 'X-Request-Id', 'Retry-After', 'Idempotent-Replayed'];

/**
 * Puts `Access-Control-Allow-Origin` on every answer. Preflights are answered by each route's own
 * OPTIONS handler (see `preflight`), so that OPTIONS on a path that is no route stays a 404 and
 * a preflight without `Origin` is still a 200, as the contract wants.
 */
export async function useCors(app: FastifyInstance, settings: CorsSettings): Promise<void> {
  await app.register(cors, {
    origin: settings.origin === '*' ? '*' : [...settings.origin],
    preflight: false,
    exposedHeaders: EXPOSED_HEADERS,
  });
}

/**
 * How long a browser may reuse a preflight's answer: a day, the most Firefox honours (Chromium caps it
 * at two hours). The answer changes only with a deployment's settings.
 */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/** The CORS preflight answer: 200, no body. */
export function preflight(reply: FastifyReply, settings: CorsSettings, allow: string): FastifyReply {
  return reply
    .code(200)
    .header('Allow', allow)
    .header('Access-Control-Allow-Methods', CORS_METHODS)
    .header('Access-Control-Allow-Headers', settings.allowedHeaders.join(', '))
    .header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS))
    .send();
}
