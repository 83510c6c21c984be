import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** What every answer carries in this deployment; routes read the preflight's settings from it. */
    readonly answerHeaders: AnswerHeaders;
  }
}

export interface AnswerHeaderSettings {
  /** `'*'` or the exact origins allowed to read answers from a browser. */
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
 * How long a browser may reuse a preflight's answer: a day, the most Firefox honours (Chromium caps it
 * at two hours). The answer changes only with a deployment's settings.
 */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/** What a caller's own id may look like; anything else could forge or flood log lines. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's id: the caller's `X-Request-Id` when it is sane (so a proxy's id follows the request
 * through), otherwise a new UUID. Fastify's `genReqId`.
 */
export function requestId(request: IncomingMessage): string {
  return idOf(request.headers['x-request-id']);
}

function idOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && SANE_ID.test(given) ? given : randomUUID();
}

/**
 * The headers every answer carries, whichever path writes it: routes and Fastify's not-found (a hook),
 * Fastify's refusals before routing (which skip hooks), and the answers written straight to the socket
 * when Node's HTTP parser refuses a request. One decision of the allowed origin, one order:
 * `X-Request-Id`, `Vary: Origin` where the answer depends on the origin, `Access-Control-Allow-Origin`
 * for an allowed one, `Access-Control-Expose-Headers`.
 */
export class AnswerHeaders {
  readonly #origins: readonly string[] | undefined;
  readonly #exposed = EXPOSED_HEADERS.join(', ');
  readonly #allowedHeaders: string;
  /** `write`'s headers but the id, per `Origin` that decides them (`''` for none or one not allowed). */
  readonly #byOrigin = new Map<string, Readonly<Record<string, string>>>();

  constructor(settings: AnswerHeaderSettings) {
    this.#origins = settings.origin === '*' ? undefined : [...settings.origin];
    this.#allowedHeaders = settings.allowedHeaders.join(', ');
  }

  /** The preflight's `Access-Control-Allow-Headers`. */
  get allowedHeaders(): string {
    return this.#allowedHeaders;
  }

  /** Writes the headers for a request with id `id` and `Origin` `origin` through `set`, in their order. */
  write(id: string, origin: string | undefined, set: (name: string, value: string) => void): void {
    set('X-Request-Id', id);
    if (this.#origins === undefined) {
      set('Access-Control-Allow-Origin', '*');
    } else {
      // Caches must keep one answer per origin: it differs by origin (Fetch standard, CORS and caches).
      set('Vary', 'Origin');
      if (origin !== undefined && this.#origins.includes(origin)) set('Access-Control-Allow-Origin', origin);
    }
    set('Access-Control-Expose-Headers', this.#exposed);
  }

  /**
   * The headers as a new object for `ServerResponse.writeHead`, the id first. Everything but the id
   * depends only on whether and which allowed origin asks: decided once per such origin.
   */
  fields(id: string, origin: string | undefined): Record<string, string> {
    const decides = origin !== undefined && this.#origins?.includes(origin) === true ? origin : '';
    let fixed = this.#byOrigin.get(decides);
    if (fixed === undefined) {
      const decided: Record<string, string> = {};
      this.write('', decides === '' ? undefined : decides, (name, value) => {
        if (name !== 'X-Request-Id') decided[name] = value;
      });
      fixed = decided;
      this.#byOrigin.set(decides, fixed);
    }
    return { 'X-Request-Id': id, ...fixed };
  }

  /** Puts the headers on a reply Fastify will send. */
  apply(request: FastifyRequest, reply: FastifyReply): void {
    this.write(request.id, request.headers.origin, (name, value) => reply.header(name, value));
  }

  /**
   * The header lines for an answer to a request the HTTP parser refused, read from the bytes it
   * received: the caller's id and origin count only where the usual checks accept them.
   */
  rawLines(received: Buffer | undefined): { readonly id: string; readonly lines: string } {
    const head = headOf(received);
    const id = idOf(rawHeader(head, 'x-request-id'));
    let lines = '';
    this.write(id, rawHeader(head, 'origin'), (name, value) => {
      lines += `${name}: ${value}\r\n`;
    });
    return { id, lines };
  }

  /** The CORS preflight answer: 200, no body. */
  preflight(reply: FastifyReply, allow: string): FastifyReply {
    return reply
      .code(200)
      .header('Allow', allow)
      .header('Access-Control-Allow-Methods', CORS_METHODS)
      .header('Access-Control-Allow-Headers', this.#allowedHeaders)
      .header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS))
      .send();
  }
}

/**
 * Gives every answer its headers: a hook for everything Fastify routes (its not-found included), and
 * the app's `answerHeaders` for the other answer paths and the routes' preflights.
 */
export function useAnswerHeaders(app: FastifyInstance, headers: AnswerHeaders): void {
  app.decorate('answerHeaders', headers);
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, reply, done) => {
    headers.apply(request, reply);
    done();
  });
}

/** The request head among the bytes the parser had, as Latin-1 (header bytes are read one to one). */
function headOf(received: Buffer | undefined): string {
  if (received === undefined) return '';
  const text = received.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  return end === -1 ? text : text.slice(0, end + 2);
}

/** A header's value in a raw head when it appears exactly once there, else `undefined`. */
function rawHeader(head: string, name: string): string | undefined {
  let value: string | undefined;
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon === -1 || line.slice(0, colon).toLowerCase() !== name) continue;
    if (value !== undefined) return undefined;
    value = line.slice(colon + 1).trim();
  }
  return value;
}
