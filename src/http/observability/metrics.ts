import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { CatalogueStore, WriteWaits } from '../../storage/store.js';
import type { WorkerGroup } from '../../workers/worker-group.js';
import { isChangeStream, type ChangeStreams } from '../feed/change-streams.js';
import type { KeptHits } from '../answers/kept-hits.js';
import type { WholeLists } from '../answers/list-stream.js';
import { LatencyHistogram, type LatencySeries } from './latency-histogram.js';
import { HttpProblem } from '../contract/problem.js';
import { resource } from '../routes/resource.js';
import { UNMATCHED_ROUTE } from './unrouted-answers.js';

/** Seconds; from a cached read to a slow full listing. */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Counts and times every answer by route and status, and serves them with the database pool's state
 * and the process's own figures at `GET /metrics` in Prometheus text format.
 *
 * Each app has its own registry, so that several apps in one process (tests) do not mix figures.
 * Requests that match no route are labelled `unmatched`, so that scanning random paths cannot grow
 * the number of series without bound.
 *
 * With workers, `/metrics` answers for all of them (the primary adds up each worker's figures);
 * `figures` gives this worker's own, for the primary to ask.
 */
export function useMetrics(app: FastifyInstance, store: CatalogueStore, { streams, hits, lists }: CountedParts, workerGroup?: WorkerGroup): AnswerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status'] as const;
  // Answers are counted into plain numbers per series and handed to prom-client when it is scraped:
  // its own `inc` builds and hashes a key from the labels on every call, a cost the profile showed.
  // The same holds for the latency histogram's observations (latency-histogram.ts).
  const counted = new Map<string, { readonly labels: Record<(typeof labelNames)[number], string>; count: number; readonly latency: LatencySeries }>();
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'Answered HTTP requests.',
    labelNames,
    registers: [registry],
    collect() {
      for (const series of counted.values()) {
        if (series.count === 0) continue;
        this.inc(series.labels, series.count);
        series.count = 0;
      }
    },
  });
  const latency = new LatencyHistogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its answer.',
    buckets: LATENCY_BUCKETS,
    registry,
  });
  new Counter({
    name: 'http_requests_answered_before_routing_total',
    help: 'Of the answered requests, those answered with a kept answer before routing.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(hits.answered);
    },
  });
  new Gauge({
    name: 'db_pool_connections',
    help: 'Database pool connections by state (total, idle) and queries waiting for one (waiting). Absent without a pool.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const stats = store.poolStats();
      if (stats === undefined) return;
      this.set({ state: 'total' }, stats.total);
      this.set({ state: 'idle' }, stats.idle);
      this.set({ state: 'waiting' }, stats.waiting);
    },
  });

  if (store.changeConnection() !== undefined) {
    new Gauge({
      name: 'catalogue_change_listener_listening',
      help: "Processes whose connection hearing other connections' commits (PostgreSQL LISTEN) listens now; while one does not, its cached reads each ask the database. Absent on SQLite.",
      registers: [registry],
      collect() {
        this.set(store.changeConnection()!.listening ? 1 : 0);
      },
    });
    new Counter({
      name: 'catalogue_change_listener_lost_total',
      help: 'Times that connection was lost while it listened (ended, or silent past its check), each followed by listening again. Absent on SQLite.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(store.changeConnection()!.lost);
      },
    });
  }

  new Counter({
    name: 'catalogue_list_steps_read_total',
    help: 'Steps of rows the streamed v1 lists read from the database; each is read only once its client has taken the one before.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(lists.stepsRead);
    },
  });
  new Gauge({
    name: 'catalogue_list_streams',
    help: 'Streamed v1 lists open, by state: all of them (open), and those holding a step their client has not taken yet (waiting).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.set({ state: 'open' }, lists.open);
      this.set({ state: 'waiting' }, lists.waiting);
    },
  });
  new Gauge({
    name: 'catalogue_change_streams',
    help: 'Change feed streams (server-sent events) open in this instance, catching up or live.',
    registers: [registry],
    collect() {
      this.set(streams.open);
    },
  });
  new Gauge({
    name: 'catalogue_change_stream_bytes',
    help: 'Bytes the change streams hold for clients that have not taken them yet (CHANGE_STREAMS_MEMORY_MB bounds them).',
    registers: [registry],
    collect() {
      this.set(streams.held);
    },
  });
  new Counter({
    name: 'catalogue_change_streams_dropped_total',
    help: 'Change streams closed because their clients did not take what they were sent: past the streams\' memory budget (memory), or behind on their own (slow). Each resumes with Last-Event-ID.',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, count] of Object.entries(streams.dropped)) this.inc({ reason }, count);
    },
  });

  // The store keeps running totals where its database tells (SQLite); each scrape reports them as they are.
  const totals: ReadonlyArray<readonly [string, string, (waits: WriteWaits) => number]> = [
    ['catalogue_write_lock_waits_total', 'Writes that found the catalogue\'s write lock held by another connection (an import, plain SQL, another process) and waited for it.', (w) => w.waits],
    ['catalogue_write_lock_wait_seconds_total', 'Seconds writes spent waiting for the catalogue\'s write lock, in all.', (w) => w.seconds],
    ['catalogue_write_lock_timeouts_total', 'Writes that gave up waiting for the catalogue\'s write lock (answered 503, nothing stored).', (w) => w.timeouts],
  ];
  for (const [name, help, value] of store.writeWaits() === undefined ? [] : totals) {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(value(store.writeWaits()!));
      },
    });
  }

  const seriesOf = (method: string, status: number, route: string) => {
    const key = `${method} ${status} ${route}`;
    let series = counted.get(key);
    if (series === undefined) {
      const labels = { method, route, status: String(status) };
      series = { labels, count: 0, latency: latency.series(labels) };
      counted.set(key, series);
    }
    return series;
  };
  let answered = 0;
  const counterOf = (method: string, status: number, route: string) => {
    const series = seriesOf(method, status, route);
    return (seconds: number): void => {
      answered += 1;
      series.count += 1;
      latency.observe(series.latency, seconds);
    };
  };
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onResponse', (request, reply, done) => {
    const series = seriesOf(request.method, reply.statusCode, request.routeOptions.url ?? UNMATCHED_ROUTE);
    if (!isChangeStream(reply.raw)) answered += 1;
    series.count += 1;
    latency.observe(series.latency, reply.elapsedTime / 1000);
    done();
  });

  resource(app, '/metrics', {
    GET: {
      options: { schema: { hide: true } },
      handler: async (_request, reply) => reply.type(registry.contentType).send(await (workerGroup === undefined ? registry.metrics() : workersMetrics(workerGroup))),
    },
  });
  return { figures: () => registry.getMetricsAsJSON(), counterOf, answered: () => answered };
}

/** The parts of the app whose own figures `/metrics` serves. */
export interface CountedParts {
  readonly streams: Pick<ChangeStreams, 'open' | 'held' | 'dropped'>;
  readonly hits: Pick<KeptHits, 'answered'>;
  readonly lists: Readonly<WholeLists>;
}

export interface AnswerMetrics {
  /** This process's own figures, as prom-client's JSON. */
  figures(): Promise<unknown>;
  /**
   * Counts answers written outside Fastify's hooks (kept-hits.ts) into the series of their method,
   * status and route, found once: the function counts one answer and its seconds.
   */
  counterOf(method: string, status: number, route: string): (seconds: number) => void;
  /** How many requests this process has answered since it started, however they were answered; change streams not counted. */
  answered(): number;
}

/** Every worker's figures, or a 503 naming the worker that did not give its own: never a partial sum. */
async function workersMetrics(workerGroup: WorkerGroup): Promise<string> {
  try {
    return await workerGroup.metrics();
  } catch (error) {
    throw new HttpProblem(503, `Not every worker reported its figures: ${error instanceof Error ? error.message : String(error)}.`, { headers: { 'Retry-After': '1' } });
  }
}
