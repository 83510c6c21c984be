import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { type AnswerHeaders, requestId } from '../contract/answer-headers.js';
import { type CachedAnswers, JSON_TYPE, type KeptForm, notModified } from './cached-answers.js';
import { STOP_BEGINS } from '../connection/stop.js';
import { isHttp1 } from '../connection/request-framing.js';
import type { RequestLog } from '../observability/request-log.js';
import type { LimitedClient } from '../guards/limits.js';
import { headerGivenTwice, type HitTarget, isValidHost, queryOf, queryProblem } from '../guards/request-address.js';

/** A route whose answers a `CachedAnswers` keeps, as the listener finds them. */
export interface HitRoute {
  /** The route as Fastify names it, e.g. `/api/v1/shop/product/:pk`: its metrics are counted under it. */
  readonly route: string;
  readonly answers: CachedAnswers;
  /**
   * The key the route itself keeps this request's answer under, or `undefined` where the route would
   * decide otherwise: the request then goes to the route.
   */
  keyOf(target: HitTarget, request: IncomingMessage): string | undefined;
}

/** A route with the counters of its two answers, found once. */
interface CountedRoute extends HitRoute {
  ok(seconds: number): void;
  notModified(seconds: number): void;
}

/** What the listener needs of the app once it is built; until then every request goes to Fastify. */
export interface HitSettings {
  readonly answerHeaders: AnswerHeaders;
  counterOf(method: string, status: number, route: string): (seconds: number) => void;
  /** Whether the overload refusal would refuse a request now: such a request goes to Fastify, which refuses it. */
  underPressure(): boolean;
  /**
   * The app's request log where every request is logged (`LOG_LEVEL` info and below): each kept answer
   * is logged with the one line a routed one gets, by the same writer (request-log.ts).
   */
  readonly requestLog?: RequestLog;
  /**
   * The rate limit's own count of a request (limits.ts), where `RATE_LIMIT` is set: the headers a
   * counted answer carries, or `undefined` where the routes must answer (over the limit, or no count).
   */
  countRequest?(client: LimitedClient): Promise<Record<string, string> | undefined>;
  /** Whether `X-Forwarded-*` may name the client and host (`TRUST_PROXY`): then only Fastify reads them. */
  readonly trustsProxy: boolean;
}

/** The settings Fastify hands its `serverFactory` (all of Fastify's options) that shape the server. */
interface ServerSettings {
  readonly http?: ServerOptions;
  readonly keepAliveTimeout?: number;
  readonly requestTimeout?: number;
  readonly connectionTimeout?: number;
}

/** Request headers whose presence asks for more than a kept answer: a body, an expectation, another protocol. */
const ASKING_MORE = ['content-length', 'transfer-encoding', 'expect', 'upgrade'] as const;

/**
 * Answers a GET whose answer is kept (a product, a page, a list, unchanged since it was read) from the
 * server's request listener, before Fastify builds its request and reply objects, routes and runs its
 * hooks: at about 15 µs of Fastify's work a request, a hit was served at under half bare Fastify's rate.
 *
 * It is the same answer by the same decisions, not a second cache: the route's own `CachedAnswers`,
 * under the key the route itself uses, in the form `CachedAnswers` chooses (coding, ETag, 304), with
 * the headers every answer carries (`AnswerHeaders`), counted in the route's metrics. It takes only
 * what it can answer exactly as the route would; every other request goes to Fastify as it came:
 * - not GET, not HTTP/1.x (refused by `useFramingRefusals`), an absolute-form target, a path that is not exactly a route's (a parameter longer than
 *   the router takes is none), a key the route would not use (`keyOf`), nothing kept, a coded form
 *   not yet made;
 * - a request that carries a body, `Expect` or `Upgrade`, or whose `Host` or query the address checks would
 *   refuse (request-address.ts), or which has no `Host` (HTTP/1.0), whose links would then use the local address;
 * - a request pipelined behind an answer not yet written (`response.socket` is null until the answers
 *   before it are out), which the pipelined order may hold back;
 * - while the service is overloaded, so that the refusal answers it;
 * - once the service stops (`STOP_BEGINS`);
 * - where the client's address or host is needed (request log, rate limit) and a trusted proxy may
 *   name them (`X-Forwarded-For`, `X-Forwarded-Host` under `TRUST_PROXY`).
 * Where every request is logged, it writes the one line a routed request gets (`request completed`,
 * logging.ts) through the app's logger with the same fields; where the rate limit is on, the limiter's own count
 * (`createRateLimit`, the same store) counts it first, and a request over the limit goes to the routes,
 * whose 429 is the answer (counting it again changes nothing it says: past the limit, 0 remain).
 */
export class KeptHits {
  readonly #routes: HitRoute[] = [];
  readonly #exact = new Map<string, CountedRoute>();
  /** Routes that end in a parameter, by the path before it (`/api/v1/shop/product/`). */
  readonly #withParam = new Map<string, CountedRoute>();
  #settings: HitSettings | undefined;
  readonly #maxParamLength: number;
  #answered = 0;
  /** The last `Host` found valid: clients send the same one request after request. */
  #validHost = '';

  /** `maxParamLength`: the router's, past which a path parameter reaches no route (Fastify answers 404). */
  constructor({ maxParamLength }: { readonly maxParamLength: number }) {
    this.#maxParamLength = maxParamLength;
  }

  /** Makes a route's kept answers reachable from the listener (once `serve` is called). */
  add(route: HitRoute): void {
    this.#routes.push(route);
  }

  /** Requests answered here so far (they are in the routes' metrics too). */
  get answered(): number {
    return this.#answered;
  }

  /** Starts answering hits; before this call, and without it, every request goes to Fastify. */
  serve(settings: HitSettings): void {
    for (const route of this.#routes) {
      const counted = { ...route, ok: settings.counterOf('GET', 200, route.route), notModified: settings.counterOf('GET', 304, route.route) };
      const colon = route.route.indexOf('/:');
      if (colon === -1) this.#exact.set(route.route, counted);
      else this.#withParam.set(route.route.slice(0, colon + 1), counted);
    }
    this.#settings = settings;
  }

  /**
   * Fastify's `serverFactory`: the HTTP server Fastify would make, with this listener in front of
   * Fastify's. Fastify sets the time limits only on a server it makes itself, so they are set here as
   * it would set them.
   */
  readonly serverFactory = (fastifyListener: RequestListener, options: ServerSettings): Server => {
    const server = createServer(options.http ?? {}, (request, response) => {
      if (!this.#answer(request, response, fastifyListener)) fastifyListener(request, response);
    });
    // Once the service stops, every request goes to Fastify (see STOP_BEGINS).
    server.once(STOP_BEGINS, () => {
      this.#settings = undefined;
    });
    // Node hands on 2,000 headers and drops the rest unseen: a `Content-Encoding` or a second `Host` after
    // them would pass every check. The 16 KiB the parser allows for the headers bounds them instead.
    server.maxHeadersCount = 0;
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    return server;
  };

  #isValidHost(host: string): boolean {
    if (host === this.#validHost) return true;
    if (!isValidHost(host)) return false;
    this.#validHost = host;
    return true;
  }

  /** Writes the kept answer (or hands it to the routes once counted) and says so, or says the request is Fastify's. */
  #answer(request: IncomingMessage, response: ServerResponse, routes: RequestListener): boolean {
    const settings = this.#settings;
    if (settings === undefined || request.method !== 'GET' || response.socket === null || !isHttp1(request)) return false;
    // Timed to the end of `end()`, which hands the bytes to the socket: waiting for 'finish' would cost
    // a listener per answer, and a kept answer is written whole at once.
    const started = performance.now();
    const url = request.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    let hit = this.#exact.get(path);
    let param = '';
    if (hit === undefined) {
      const slash = path.lastIndexOf('/');
      hit = this.#withParam.get(path.slice(0, slash + 1));
      param = path.slice(slash + 1);
      if (hit === undefined || param === '' || param.length > this.#maxParamLength) return false;
    }
    const { headers } = request;
    const host = headers.host;
    if (host === undefined || !this.#isValidHost(host) || headerGivenTwice(request.rawHeaders) !== undefined) return false;
    for (const name of ASKING_MORE) if (headers[name] !== undefined) return false;
    const encoded = queryOf(url);
    if (encoded !== undefined && queryProblem(encoded) !== undefined) return false;
    if (settings.underPressure()) return false;
    const key = hit.keyOf({ url, param, base: `http://${host}` }, request);
    if (key === undefined) return false;
    const form = hit.answers.formNow(key, headers['accept-encoding']);
    if (form === undefined) return false;

    const { countRequest } = settings;
    if ((settings.requestLog !== undefined || countRequest !== undefined) && settings.trustsProxy) {
      if (headers['x-forwarded-for'] !== undefined || headers['x-forwarded-host'] !== undefined) return false;
    }
    const id = requestId(request);
    const client: LimitedClient = { method: 'GET', url, host, ip: request.socket.remoteAddress, headers, socket: request.socket };
    // A no-op below LOG_LEVEL debug, as a routed request's (logging.ts).
    settings.requestLog?.arrived(id, client);
    if (countRequest === undefined) {
      this.#write(settings, hit, form, id, client, response, started, undefined);
      return true;
    }
    countRequest(client).then(
      (limitFields) => {
        if (limitFields === undefined) routes(request, response);
        else this.#write(settings, hit, form, id, client, response, started, limitFields);
      },
      () => routes(request, response),
    );
    return true;
  }

  #write(settings: HitSettings, hit: CountedRoute, form: KeptForm, id: string, client: LimitedClient, response: ServerResponse, started: number, limitFields: Record<string, string> | undefined): void {
    const { headers } = client;
    const fields = settings.answerHeaders.fields(id, headers.origin);
    if (limitFields !== undefined) Object.assign(fields, limitFields);
    if (form.variesByEncoding) fields.Vary = fields.Vary === undefined ? 'Accept-Encoding' : `${fields.Vary}, Accept-Encoding`;
    if (notModified(headers['if-none-match'], form.etag)) {
      fields.ETag = form.etag;
      response.writeHead(304, fields);
      response.end();
      this.#answered += 1;
      const elapsed = performance.now() - started;
      hit.notModified(elapsed / 1000);
      settings.requestLog?.completed(id, client, 304, elapsed);
      return;
    }
    // In the order the route writes them.
    if (form.coding !== undefined) fields['Content-Encoding'] = form.coding;
    fields.ETag = form.etag;
    fields['Content-Type'] = JSON_TYPE;
    fields['Content-Length'] = String(form.length);
    response.writeHead(200, fields);
    response.end(form.bytes);
    this.#answered += 1;
    const elapsed = performance.now() - started;
    hit.ok(elapsed / 1000);
    settings.requestLog?.completed(id, client, 200, elapsed);
  }
}
