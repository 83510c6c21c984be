import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FieldErrors } from '../../catalogue/product.js';
import { HttpProblem } from '../contract/problem.js';

/** What a request to a route with kept answers is, for its key: the target as sent and the parts the key may need. */
export interface HitTarget {
  /** The request target as sent, query included (origin form). */
  readonly url: string;
  /** The last path segment, for a route that ends in a parameter (`/product/:pk`); else empty. */
  readonly param: string;
  /** `http://` and the `Host` the client sent: what the links in an answer start with. */
  readonly base: string;
}

/** A host name, IPv4 or bracketed IPv6 address, and an optional port: nothing a URL could misread. */
const HOST_AND_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::([0-9]{1,5}))?$/;

/**
 * Whether `host` may be written into a link: a plain host and an optional port from 1 to 65535. A name
 * has no empty label (`a..b`, `.a`); one final dot, the DNS root (`shop.example.`), is allowed.
 */
export function isValidHost(host: string): boolean {
  const match = HOST_AND_PORT.exec(host);
  if (match === null) return false;
  const [, name = '', port] = match;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return false;
  return name.startsWith('[') || !(name.endsWith('.') ? name.slice(0, -1) : name).split('.').includes('');
}

export interface RequestAddress {
  /** `http://host:port`, as the client addressed the service. */
  readonly base: string;
  /** The path exactly as the client wrote it (a trailing slash kept). */
  readonly path: string;
  readonly params: URLSearchParams;
}

/**
 * Refuses a request whose `Host` is not a plain host and port, that has more than one `Host` (or
 * `Content-Type`, or `Authorization`: ONCE_ONLY), or an
 * HTTP/1.1 request that has none (RFC 9112 §3.2: 400), because the host is written into the absolute
 * links the service returns. HTTP/1.0 has no Host requirement: links then use the local address.
 * Refuses too, on every route, a query whose percent-encoding is broken (`?x=%ff`), before the body is
 * read: nothing is created by a request whose address does not even decode. A CORS preflight is let
 * through: its answer is about the method, and the request it asks for gets the 400.
 */
export function useRequestAddressChecks(app: FastifyInstance): void {
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, _reply, done) => {
    const twice = headerGivenTwice(request.raw.rawHeaders);
    if (twice !== undefined) return done(new HttpProblem(400, `The request has more than one ${twice} header.`));
    const host = request.headers.host;
    if (host === undefined && request.raw.httpVersion === '1.1') return done(new HttpProblem(400, 'The request has no Host header.'));
    if (host !== undefined && !isValidHost(host)) return done(new HttpProblem(400, 'The Host header is not a valid host name and port.'));
    const query = queryOf(request.url);
    if (request.method !== 'OPTIONS' && query !== undefined) {
      const problem = queryProblem(query);
      if (problem !== undefined) return done(problem);
    }
    done();
  });
}

/** The query of a request target (after its first `?`) where it holds a `%`, the one thing that can be broken in it; else `undefined`. */
export function queryOf(target: string): string | undefined {
  const start = target.indexOf('?');
  return start !== -1 && target.includes('%', start) ? target.slice(start + 1) : undefined;
}

/**
 * Headers a request may carry once only, by their lower-case names. Node keeps the first of several and
 * drops the rest unseen, while a proxy in front may have read the last: which `Host` the links name,
 * which `Content-Type` the body is read as, which token is checked, would be anyone's guess.
 */
const ONCE_ONLY: ReadonlyMap<string, { readonly bit: number; readonly shown: string }> = new Map([
  ['host', { bit: 1, shown: 'Host' }],
  ['content-type', { bit: 2, shown: 'Content-Type' }],
  ['authorization', { bit: 4, shown: 'Authorization' }],
]);

/** The name of a header the request carries more than once that it may carry once only, or `undefined`. */
export function headerGivenTwice(rawHeaders: readonly string[]): string | undefined {
  // Bits, not a set: every request passes here, the kept answers' included.
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const once = ONCE_ONLY.get(rawHeaders[i]!.toLowerCase());
    if (once === undefined) continue;
    if ((seen & once.bit) !== 0) return once.shown;
    seen |= once.bit;
  }
  return undefined;
}

/**
 * Where a request was sent. An absolute-form target (`GET http://host/path`) names the host itself,
 * which then wins over `Host` (RFC 9112 §3.2.2); an HTTP/1.0 request without `Host` gets the
 * address it arrived on.
 */
export function requestAddress(request: FastifyRequest): RequestAddress {
  const target = request.url;
  if (!target.startsWith('/')) {
    const url = absoluteTarget(target);
    if (url === undefined) throw unnamedHost();
    return { base: `${linkScheme(request)}://${url.host}`, path: url.pathname, params: checkedQuery(url.search.slice(1)) };
  }
  const query = target.indexOf('?');
  return {
    base: linkBase(request),
    path: query === -1 ? target : target.slice(0, query),
    params: checkedQuery(query === -1 ? '' : target.slice(query + 1)),
  };
}

/** An absolute-form request target (`http://host/path`) as a URL, or `undefined` where it names no valid host. */
export function absoluteTarget(target: string): URL | undefined {
  // `URL.parse` gives null where `new URL` would throw (a port past 65535, say): a 400, not a 500.
  const url = URL.parse(target);
  return url === null || !isValidHost(url.host) ? undefined : url;
}

/** The refusal of an absolute-form target that names no valid host. */
export function unnamedHost(): HttpProblem {
  return new HttpProblem(400, 'The request target does not name a valid host.');
}

/**
 * The parameters of a query, refusing those whose percent-encoding is broken (`%zz`) or does not
 * decode to UTF-8 text (`%ff`). URLSearchParams would keep the first as written and turn the second
 * into U+FFFD: a search for text the client never sent.
 * @throws HttpProblem 400 naming each such parameter.
 */
function checkedQuery(query: string): URLSearchParams {
  const problem = queryProblem(query);
  if (problem !== undefined) throw problem;
  return new URLSearchParams(query);
}

/** The 400 naming each parameter of `query` that does not decode, or `undefined` where all do. */
export function queryProblem(query: string): HttpProblem | undefined {
  if (!query.includes('%')) return undefined;
  // A Map: a parameter may be named `__proto__`.
  const errors = new Map<string, string[]>();
  for (const pair of query.split('&')) {
    const equals = pair.indexOf('=');
    const [name, value] = equals === -1 ? [pair, ''] : [pair.slice(0, equals), pair.slice(equals + 1)];
    if (decodes(name) && decodes(value)) continue;
    const named = decodes(name) ? decodeURIComponent(name.replaceAll('+', ' ')) : name;
    const which = decodes(name) ? 'The value' : "The parameter's name";
    errors.set(named, [`${which} is not valid percent-encoding of UTF-8 text (a \`%\` not followed by two hex digits, or bytes that are not UTF-8).`]);
  }
  return errors.size > 0 ? new HttpProblem(400, 'The query parameters are not valid.', { errors: Object.fromEntries(errors) as FieldErrors }) : undefined;
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text.replaceAll('+', ' '));
    return true;
  } catch {
    return false;
  }
}

/**
 * The key of an answer that holds links (a page's `next`): the address they will be written with,
 * their scheme and host (a trusted proxy's included) and the target as sent. `undefined` where the
 * links would depend on more than that (no Host, or an absolute-form target): such answers are not kept.
 */
export function linkedAnswerKey(request: FastifyRequest): string | undefined {
  return request.headers.host === undefined || !request.url.startsWith('/') ? undefined : `${linkBase(request)}${request.url}`;
}

/**
 * `linkedAnswerKey` of a request read before routing (kept-hits.ts): the same key where the links are
 * written with the `Host` as sent; `undefined` where a proxy's `X-Forwarded-*` may have a say in them.
 */
export function linkedHitKey(target: HitTarget, request: IncomingMessage): string | undefined {
  const { headers } = request;
  return headers['x-forwarded-host'] === undefined && headers['x-forwarded-proto'] === undefined ? `${target.base}${target.url}` : undefined;
}

/**
 * `scheme://host[:port]` that links to an origin-form request start with: the scheme and host the client
 * used, `X-Forwarded-Proto` and `X-Forwarded-Host` from a proxy TRUST_PROXY names, else the connection's
 * own scheme and `Host`. A forwarded value that is no `http`/`https` or no valid host is ignored.
 */
export function linkBase(request: FastifyRequest): string {
  // `request.host` is `Host`, which the Host check has passed, or `X-Forwarded-Host` from a trusted proxy.
  const claimed = request.host;
  const host = claimed === request.headers.host || (claimed !== '' && isValidHost(claimed)) ? claimed : (request.headers.host ?? localAddress(request));
  return `${linkScheme(request)}://${host}`;
}

/**
 * `request.protocol` is whatever a trusted proxy wrote in `X-Forwarded-Proto`: only the two schemes
 * this service can be reached by go into a link (case-insensitive, RFC 3986 §3.1); anything else is a
 * proxy's or client's mistake, and the connection's own scheme is the one answer known to work.
 */
function linkScheme(request: FastifyRequest): 'http' | 'https' {
  const claimed = request.protocol.toLowerCase();
  if (claimed === 'http' || claimed === 'https') return claimed;
  return 'encrypted' in request.socket && request.socket.encrypted === true ? 'https' : 'http';
}

function localAddress(request: FastifyRequest): string {
  const { localAddress: address = '127.0.0.1', localPort } = request.socket;
  return `${address.includes(':') ? `[${address}]` : address}:${localPort}`;
}
