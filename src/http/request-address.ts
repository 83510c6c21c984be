import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpProblem } from './problem.js';

/** A host name, IPv4 or bracketed IPv6 address, and an optional port: nothing a URL could misread. */
const VALID_HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(:[0-9]{1,5})?$/;

export interface RequestAddress {
  /** `http://host:port`, as the client addressed the service. */
  readonly base: string;
  /** The path exactly as the client wrote it (a trailing slash kept). */
  readonly path: string;
  readonly params: URLSearchParams;
}

/**
 * Refuses a request whose `Host` is not a plain host and port, or that has more than one `Host`
 * (RFC 9112 §3.2: 400), because the host is written into the absolute links the service returns.
 */
export function useHostCheck(app: FastifyInstance): void {
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, _reply, done) => {
    // Node keeps the first of several Host headers; which one a proxy in front used is anyone's guess.
    if (countHeader(request.raw.rawHeaders, 'host') > 1) return done(new HttpProblem(400, 'The request has more than one Host header.'));
    const host = request.headers.host;
    if (host !== undefined && !VALID_HOST.test(host)) return done(new HttpProblem(400, 'The Host header is not a valid host name and port.'));
    done();
  });
}

function countHeader(rawHeaders: readonly string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) count += 1;
  return count;
}

/**
 * Where a request was sent. An absolute-form target (`GET http://host/path`) names the host itself,
 * which then wins over `Host` (RFC 9112 §3.2.2); an HTTP/1.0 request without `Host` gets the
 * address it arrived on.
 */
export function requestAddress(request: FastifyRequest): RequestAddress {
  const target = request.url;
  if (!target.startsWith('/')) {
    const url = new URL(target);
    if (!VALID_HOST.test(url.host)) throw new HttpProblem(400, 'The request target does not name a valid host.');
    return { base: `${request.protocol}://${url.host}`, path: url.pathname, params: url.searchParams };
  }
  const query = target.indexOf('?');
  return {
    // `request.host` is `Host`, or `X-Forwarded-Host` from a proxy TRUST_PROXY names.
    base: `${request.protocol}://${request.host !== '' && VALID_HOST.test(request.host) ? request.host : (request.headers.host ?? localAddress(request))}`,
    path: query === -1 ? target : target.slice(0, query),
    params: new URLSearchParams(query === -1 ? '' : target.slice(query + 1)),
  };
}

function localAddress(request: FastifyRequest): string {
  const { localAddress: address = '127.0.0.1', localPort } = request.socket;
  return `${address.includes(':') ? `[${address}]` : address}:${localPort}`;
}
