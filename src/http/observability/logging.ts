import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyServerOptions } from 'fastify';

/**
 * Where a secret could sit in a log line; pino writes `[redacted]` instead. A request's own fields are
 * written by the `req` serializer below, which never writes its headers: paths under `req` would cost
 * every request line a pass of the redaction (some 8 % of a cached read's rate) to find nothing.
 */
const SECRET_PATHS = ['headers.authorization', 'headers.cookie'];

/** The message of the one line each answered request is logged with, routed or kept (kept-hits.ts). */
export const REQUEST_LINE = 'request completed';

/** What a log line says of a request (its `req` field), in this order. */
export type RequestFields = {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly remoteAddress: string | undefined;
  readonly userAgent: string | undefined;
};

/** What a request's log fields are read from: a routed request, or a kept answer's (kept-hits.ts). */
export interface LoggedRequest {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly ip: string | undefined;
  readonly headers: IncomingHttpHeaders;
}

/** A request's fields for its log lines: never its headers, so that a token cannot reach a log. */
export function requestFields(request: LoggedRequest): RequestFields {
  return { method: request.method, url: request.url, host: request.host, remoteAddress: request.ip, userAgent: request.headers['user-agent'] };
}

// Fastify's classes are not loaded here (its types only): the workers' primary writes its lines with
// these settings, and loads nothing of the app.

/**
 * The server's JSON log settings. Each request is logged with its id, method, URL and client,
 * never its headers, so a token cannot reach a log.
 */
export function loggerOptions(level: string): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    redact: { paths: SECRET_PATHS, censor: '[redacted]' },
    serializers: { req: requestFields },
  };
}
