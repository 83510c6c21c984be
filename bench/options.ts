import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** `undefined`: a fresh SQLite file; otherwise a PostgreSQL server URL to create a scratch database on. */
  readonly database: string | undefined;
  readonly size: number;
  /** Whole seconds per measured run of one scenario against one target (wrk counts in seconds). */
  readonly duration: number;
  /** Seconds of load per target before a scenario's rounds, not counted; 0: none. */
  readonly warmup: number;
  /** The run's connection count; a scenario may set its own. */
  readonly connections: number;
  /** wrk's threads. */
  readonly threads: number;
  /** How many times each scenario runs against each target, in a rotating order; the best round is reported. */
  readonly rounds: number;
  readonly smoke: boolean;
  /** Scenario names to run; empty: all. */
  readonly only: readonly string[];
  /** Other builds of the service driven in the same run, for before/after numbers: label to dist folder. */
  readonly compare: ReadonlyMap<string, string>;
  /**
   * The service's WORKERS for each of its runs: one entry (default 1, so that the service and the
   * one-process baselines are compared per process), or several, each driven in the same run.
   */
  readonly workers: readonly number[];
  /** The bulk writes (bulk.ts) at these sizes instead of the HTTP scenarios; empty: the HTTP scenarios. */
  readonly bulk: readonly number[];
  /** A whole copy through the change feed against the v1 list (sync.ts) instead of the HTTP scenarios. */
  readonly sync: boolean;
  /** Uncached searches at a shop's scale, and details beside short searches (search.ts), instead of the HTTP scenarios. */
  readonly search: boolean;
  /** With `search`: the bench's own names, or a shop's that the service was not designed around (shop-names.ts). */
  readonly names: 'bench' | 'shop';
  /**
   * Change-feed streams that never read, beside creates and detail reads (slow-readers.ts), instead of
   * the HTTP scenarios: how many streams, and the service's WORKERS (`auto` unless given).
   */
  readonly slowReaders: { readonly streams: number; readonly workers: string } | undefined;
  /**
   * The whole v1 list read by `clients` clients at once, plain, gzip and br, beside detail reads
   * (lists.ts), instead of the HTTP scenarios; the service's WORKERS (`auto` unless given).
   */
  readonly lists: { readonly clients: number; readonly workers: string } | undefined;
  /**
   * Settings for the service, laid over its defaults (`--with NAME=VALUE`): the service runs as `npm
   * start` runs it (LOG_LEVEL info, no RATE_LIMIT) unless told.
   */
  readonly with: ReadonlyMap<string, string>;
}

const USAGE = `npm run bench -- [--size N] [--duration SECONDS] [--warmup SECONDS] [--rounds N]
                  [--connections N] [--threads N]
                  [--database postgres://user@host:port/db] [--only name,name] [--smoke]
                  [--compare LABEL=DIST_DIR ...]   (another build of the service, driven in the same run)
                  [--workers 1,2]   (the service with each WORKERS in the same run; default 1)
       npm run bench -- --bulk [--size N] [--database postgres://...] [--smoke]
                  (imports, price lists, SQL updates and a start after a plain load; 100,000 and 1,000,000 rows, or N)
       npm run bench -- --sync [--size N] [--rounds N] [--database postgres://...] [--smoke]
                  (a whole copy through the change feed against the v1 list, in CPU seconds; 1,000,000 products, or N)
       npm run bench -- --search [--names bench|shop] [--size N] [--duration SECONDS] [--rounds N] [--workers N] [--database postgres://...] [--smoke]
                  (searches that are not cached, rare and common terms, and details beside short searches; 1,000,000 products,
                   or N; --names shop: names of a shop's catalogue, in several languages, with sizes, codes and brands of several words)
       npm run bench -- --slow-readers [--streams N] [--size N] [--connections N] [--duration SECONDS]
                  [--workers N] [--database postgres://...] [--smoke]
                  (streams from version 0 that never read, beside creates and detail reads: 1,000 streams,
                  100,000 products, 20 clients creating for 15 s, the service's own WORKERS; or as given)
       npm run bench -- --lists [--connections N] [--size N] [--workers N] [--database postgres://...] [--smoke]
                  (the whole v1 list read by 8 clients at once, plain, then gzip, then br, beside detail reads:
                  1,000,000 products, the service's own WORKERS; or as given)
       Any run: [--with NAME=VALUE ...]   (a setting for the service, e.g. --with RATE_LIMIT=1000000/second
                  or --with LOG_LEVEL=warn; the service runs at its defaults otherwise)`;

/** Reads the command line; throws with the usage text on anything it does not understand. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      size: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      threads: { type: 'string' },
      rounds: { type: 'string' },
      database: { type: 'string' },
      only: { type: 'string' },
      compare: { type: 'string', multiple: true },
      workers: { type: 'string' },
      smoke: { type: 'boolean', default: false },
      bulk: { type: 'boolean', default: false },
      sync: { type: 'boolean', default: false },
      search: { type: 'boolean', default: false },
      names: { type: 'string' },
      'slow-readers': { type: 'boolean', default: false },
      streams: { type: 'string' },
      lists: { type: 'boolean', default: false },
      with: { type: 'string', multiple: true },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) throw new Error(USAGE);
  const smoke = values.smoke === true;
  const whole = (name: string, text: string | undefined, fallback: number, min: number): number => {
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < min) throw new Error(`--${name} ${text} is not valid (a whole number, at least ${min}).\n${USAGE}`);
    return value;
  };
  const database = values.database;
  if (database !== undefined && !/^postgres(ql)?:\/\//.test(database)) {
    throw new Error(`--database must be a postgres:// URL (the default is a fresh SQLite file).\n${USAGE}`);
  }
  const compare = new Map<string, string>();
  for (const entry of values.compare ?? []) {
    const at = entry.indexOf('=');
    if (at <= 0) throw new Error(`--compare ${entry} is not valid: expected LABEL=DIST_DIR.\n${USAGE}`);
    compare.set(entry.slice(0, at), entry.slice(at + 1));
  }
  const workers = (values.workers ?? '1').split(',').map((text) => whole('workers', text.trim(), 1, 1));
  const slowReaders = values['slow-readers'] === true;
  const lists = values.lists === true;
  if ([values.bulk, values.sync, values.search, slowReaders, lists].filter((mode) => mode === true).length > 1) throw new Error(`--bulk, --sync, --search, --slow-readers and --lists are runs of their own: give one.\n${USAGE}`);
  if (lists && workers.length > 1) throw new Error(`--lists runs the service with one WORKERS count.\n${USAGE}`);
  const withSettings = new Map<string, string>();
  for (const entry of values.with ?? []) {
    const at = entry.indexOf('=');
    if (at <= 0 || !/^[A-Z][A-Z0-9_]*$/.test(entry.slice(0, at))) throw new Error(`--with ${entry} is not valid: expected NAME=VALUE, e.g. RATE_LIMIT=1000000/second.\n${USAGE}`);
    withSettings.set(entry.slice(0, at), entry.slice(at + 1));
  }
  if (values.streams !== undefined && !slowReaders) throw new Error(`--streams is for --slow-readers.\n${USAGE}`);
  if (slowReaders && workers.length > 1) throw new Error(`--slow-readers runs the service with one WORKERS count.\n${USAGE}`);
  if (values.search === true && workers.length > 1) throw new Error(`--search runs the service with one WORKERS count.\n${USAGE}`);
  const names = values.names ?? 'bench';
  if (names !== 'bench' && names !== 'shop') throw new Error(`--names ${names} is not valid: bench or shop.\n${USAGE}`);
  if (values.names !== undefined && values.search !== true) throw new Error(`--names goes with --search.\n${USAGE}`);
  if (workers.length > 1 && compare.size > 0) throw new Error(`--workers with several counts and --compare cannot be combined: compare builds at one WORKERS.\n${USAGE}`);
  const connections = whole('connections', values.connections, smoke ? (slowReaders || lists ? 2 : 4) : slowReaders ? 20 : lists ? 8 : 32, 1);
  const threads = whole('threads', values.threads, 1, 1);
  if (threads > connections) throw new Error(`--threads ${threads} is more than --connections ${connections}: wrk needs a connection per thread.\n${USAGE}`);
  return Object.freeze({
    compare,
    workers,
    database,
    size: whole('size', values.size, smoke ? (lists ? 60_000 : 300) : values.sync === true || values.search === true || lists ? 1_000_000 : slowReaders ? 100_000 : 10_000, 200),
    duration: whole('duration', values.duration, smoke ? 1 : slowReaders ? 15 : 5, 1),
    warmup: whole('warmup', values.warmup, smoke ? 0 : 1, 0),
    connections,
    threads,
    rounds: whole('rounds', values.rounds, smoke ? 1 : 3, 1),
    smoke,
    only: values.only === undefined ? [] : values.only.split(',').map((s) => s.trim()),
    sync: values.sync === true,
    search: values.search === true,
    names,
    slowReaders: slowReaders ? { streams: whole('streams', values.streams, smoke ? 20 : 1_000, 1), workers: values.workers === undefined ? 'auto' : String(workers[0]) } : undefined,
    lists: lists ? { clients: connections, workers: values.workers === undefined ? 'auto' : String(workers[0]) } : undefined,
    with: withSettings,
    bulk: values.bulk !== true ? [] : values.size !== undefined ? [whole('size', values.size, 0, 200)] : smoke ? [2_000] : [100_000, 1_000_000],
  });
}
