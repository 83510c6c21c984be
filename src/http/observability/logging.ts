import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** Where a secret could sit in a log line; pino writes `[redacted]` instead. */
const SECRET_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'];

/**
 * The server's JSON log settings. Each request is logged with its id, method, URL and client,
 * never its headers, so a token cannot reach a log.
 */
export function loggerOptions(level: string): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    redact: { paths: SECRET_PATHS, censor: '[redacted]' },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: request.url,
        host: request.host,
        remoteAddress: request.ip,
        userAgent: request.headers['user-agent'],
      }),
    },
  };
}
