// Brings in the OpenAPI fields (summary, tags, hide) of route schemas.
import type {} from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.js';
import { AnswerHeaders, requestId, useAnswerHeaders } from './http/contract/answer-headers.js';
import { useApiDocs } from './http/contract/docs.js';
import { useProblemErrors } from './http/guards/error-handler.js';
import { health } from './http/routes/health.js';
import { BODY_LIMIT_BYTES, useStrictJsonBodies } from './http/guards/json-body.js';
import { TIMEOUTS, useRateLimit } from './http/guards/limits.js';
import { connectionRefusals, useConnectionHandling } from './http/connection/connection-handling.js';
import { useFramingRefusals } from './http/connection/request-framing.js';
import { KeptHits } from './http/answers/kept-hits.js';
import { useMetrics } from './http/observability/metrics.js';
import { logAbortedRequests, OneLinePerRequest } from './http/observability/one-line-per-request.js';
import { UnroutedAnswers } from './http/observability/unrouted-answers.js';
import { RequestLog } from './http/observability/request-log.js';
import { changes } from './http/routes/changes.js';
import { ChangeStreams } from './http/feed/change-streams.js';
import { declareOverloadAnswer, useOverloadRefusal } from './http/guards/overload.js';
import { productsV1, type WholeListSettings } from './http/routes/products-v1.js';
import { WholeLists } from './http/answers/list-stream.js';
import { useRequestAddressChecks } from './http/guards/request-address.js';
import { usePageMethods } from './http/routes/resource.js';
import { productsV2 } from './http/routes/products-v2.js';
import { useSharedSchemas } from './http/contract/responses.js';
import { webPage } from './http/routes/web-page.js';
import { useWriteToken } from './http/guards/write-access.js';
import type { CatalogueStore } from './storage/store.js';
import type { WorkerGroup } from './workers/worker-group.js';

export interface AppOptions {
  readonly config: Config;
  readonly store: CatalogueStore;
  /** Fastify's logger setting: `false` in tests, pino options in the server. */
  readonly logger?: FastifyServerOptions['logger'];
  /**
   * Whether new requests get a 503 while the event loop lags (default yes). Off where the app shares
   * its process with other work, as in the test suite, whose pauses are not the service's overload.
   */
  readonly refuseWhenOverloaded?: boolean;
  /**
   * The other processes serving the same port (`WORKERS`), when this app is one of them: limits,
   * metrics and readiness then cover all of them.
   */
  readonly workerGroup?: WorkerGroup;
  /** Where the v1 list stops being kept whole and how many rows a streamed one reads per step: the defaults unless a test needs a short streamed list. */
  readonly wholeList?: WholeListSettings;
}

/**
 * Builds the catalogue's HTTP application over a store. It reads no environment and never listens.
 *
 * @example const app = await buildApp({ config: loadConfig({}), store }); await app.listen({ port: 0 });
 */
export async function buildApp({ config, store, logger = false, refuseWhenOverloaded = true, workerGroup, wholeList }: AppOptions): Promise<FastifyInstance> {
  // Last-Event-ID: EventSource sends it when it resumes a change stream, from a page on any origin.
  const allowedHeaders = ['Content-Type', 'Idempotency-Key', 'Last-Event-ID'];
  if (config.apiToken !== undefined) allowedHeaders.push('Authorization');
  const answerHeaders = new AnswerHeaders({ origin: config.corsOrigin, allowedHeaders });
  const hits = new KeptHits({ maxParamLength: MAX_PARAM_LENGTH });
  const requestLines = new OneLinePerRequest();
  const unrouted = new UnroutedAnswers();
  const app = Fastify({
    logger,
    logController: requestLines,
    // Kept answers are written from the server's listener, ahead of Fastify (kept-hits.ts).
    serverFactory: hits.serverFactory,
    bodyLimit: BODY_LIMIT_BYTES,
    // A longer path parameter does not reach its route: Fastify's not-found answers it, saying the path
    // is not valid. 200 lets any pk a client could mean (and far more) get the product route's own 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    trustProxy: trustProxySetting(config.trustProxy),
    genReqId: requestId,
    ...connectionRefusals(answerHeaders, unrouted),
    requestTimeout: TIMEOUTS.requestMs,
    // Node enforces the header and request time limits only when it checks its connections, every
    // 30 s by default: a limit of 15 s could then take 45 s to strike.
    // Node answers an HTTP/1.1 request without Host itself, with an empty 400 that carries none of the
    // headers every answer carries; the Host check refuses it instead, as a problem document.
    http: { connectionsCheckingInterval: TIMEOUTS.checkEveryMs, requireHostHeader: false },
    connectionTimeout: TIMEOUTS.idleSocketMs,
    keepAliveTimeout: TIMEOUTS.keepAliveMs,
    // While stopping, a request that still arrives on an open connection is served (the database
    // closes only after it) instead of getting Fastify's own 503 body, which is no problem document.
    return503OnClosing: false,
  });
  app.server.headersTimeout = TIMEOUTS.headersMs;

  // The order below is load-bearing, and this is the one place that says why. Hooks and onRoute hooks
  // act only on what is registered after them, so each step comes after what it must see:
  // 1. what every answer carries (problem errors, strict JSON, the connection's handling below the
  //    routes, request id, CORS), then the refusals of framing the parser lets through (an HTTP
  //    version, a transfer coding) and the Host check, so that their 400s carry those headers like any
  //    answer, then the methods of the page and docs paths, which answer only after both; every
  //    route's preflight reads the app's answerHeaders, which therefore come before any route;
  // 2. the API docs, which learn each route as it is added;
  // 3. probes, metrics and the page with its assets, before the rate limit and the token, so that
  //    monitoring is never held back and the page always loads whole (its API calls are limited);
  // 4. the rate limit and the write token, whose onRoute hooks add 429 and 401 to the documented
  //    answers of the routes after them (test/openapi.test.ts checks the document says so);
  // 5. the catalogue's routes.
  useProblemErrors(app);
  useStrictJsonBodies(app);
  // Every answered request's line, routed, kept or refused before routing, is written by one writer over the app's logger.
  const requestLog = REQUEST_LOG_LEVELS.has(app.log.level) ? new RequestLog(app.log) : undefined;
  requestLines.requestLog = requestLog;
  unrouted.requestLog = requestLog;
  useConnectionHandling(app, answerHeaders, unrouted);
  if (requestLog !== undefined) logAbortedRequests(app);
  useAnswerHeaders(app, answerHeaders);
  useFramingRefusals(app);
  useRequestAddressChecks(app);
  usePageMethods(app);
  await useApiDocs(app, { writeToken: config.apiToken !== undefined });
  useSharedSchemas(app);
  // Before everything that costs work, after the hooks that give every answer its id and CORS headers.
  declareOverloadAnswer(app);
  const underPressure = refuseWhenOverloaded ? await useOverloadRefusal(app) : () => false;
  // With workers, the bounds are the instance's: the primary counts every worker's streams and their memory.
  // Their catching up is paced while other requests are answered, which the metrics (made after them) count.
  let answered = (): number => 0;
  const streams = new ChangeStreams(store, { max: config.changeStreamsMax, memoryBudget: config.changeStreamsMemoryBytes, shared: workerGroup, answered: () => answered() });
  // Streams never end by themselves: a stop would otherwise wait its whole time limit for them.
  app.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });
  const lists = new WholeLists();
  const metrics = useMetrics(app, store, { streams, hits, lists }, workerGroup);
  unrouted.counterOf = metrics.counterOf;
  answered = metrics.answered;
  workerGroup?.answerWith({ metrics: metrics.figures, ready: () => store.ping(), shedStreamBytes: (bytes) => streams.shed(bytes) });
  await app.register(health, { store, workerGroup });
  await app.register(webPage);
  const countRequest = config.rateLimit === undefined ? undefined : await useRateLimit(app, config.rateLimit, workerGroup);
  if (config.apiToken !== undefined) useWriteToken(app, config.apiToken);
  await app.register(productsV1, { store, hits, lists, ...(wholeList === undefined ? {} : { wholeList }) });
  await app.register(productsV2, {
    store,
    hits,
    pagination: config.pagination,
    pageSize: config.pageSize,
    maxLimit: config.maxLimit,
  });
  await app.register(changes, { store, streams });
  // A hit answered ahead of Fastify is logged and counted by the rate limit as Fastify would (kept-hits.ts).
  hits.serve({
    answerHeaders,
    counterOf: metrics.counterOf,
    underPressure,
    ...(requestLog === undefined ? {} : { requestLog }),
    ...(countRequest === undefined ? {} : { countRequest }),
    trustsProxy: config.trustProxy !== false,
  });
  return app;
}

/** A longer path parameter reaches no route: see the router's options below. */
const MAX_PARAM_LENGTH = 200;

/** Levels at which every request is logged (one line each, logging.ts). */
const REQUEST_LOG_LEVELS: ReadonlySet<string> = new Set(['info', 'debug', 'trace']);

function trustProxySetting(trust: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return trust === false ? false : [...trust];
}
