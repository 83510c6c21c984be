import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';

export type Pagination = 'limit-offset' | 'page-number';

export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string };

/** At most `max` requests per client in each window of `windowMs` milliseconds. */
export interface RateLimit {
  readonly max: number;
  readonly windowMs: number;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly database: DatabaseLocation;
  readonly dbPoolMax: number;
  /**
   * How long a write waits for the catalogue's write lock (another process's import or SQL, another
   * writer) before it gives up with nothing stored, in milliseconds.
   */
  readonly writeWaitMs: number;
  /**
   * How many processes serve the port (`WORKERS`): with more than one, a primary process starts them,
   * replaces one that ends, and stops them all. `auto` is the cores this process may use.
   */
  readonly workers: number;
  /** Most change feed streams (server-sent events) one instance keeps open at once. */
  readonly changeStreamsMax: number;
  /**
   * Most bytes one instance's change streams hold at once for clients that have not taken them, all
   * its workers together; past it the streams whose clients have been behind longest are closed.
   */
  readonly changeStreamsMemoryBytes: number;
  readonly pagination: Pagination;
  readonly pageSize: number;
  readonly maxLimit: number;
  /** `'*'` or a list of exact origins allowed to read answers from a browser. */
  readonly corsOrigin: '*' | readonly string[];
  readonly logLevel: string;
  /** When set, creating a product needs `Authorization: Bearer <apiToken>`; reads stay public. */
  readonly apiToken: string | undefined;
  /** Per-client request limit, or `undefined` for none. */
  readonly rateLimit: RateLimit | undefined;
  /**
   * Which proxies' `X-Forwarded-*` headers to believe: none (`false`), the nearest N hops, or
   * proxies at these addresses. Decides the client address (rate limit, logs) and the scheme and
   * host of v2 page links.
   */
  readonly trustProxy: false | number | readonly string[];
  /**
   * Whether opening the database brings its schema up to date. Off for deployments that migrate as a
   * separate step: the service then refuses a schema that is not current.
   */
  readonly migrateOnStart: boolean;
}

export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const BOOLEANS: ReadonlyMap<string, boolean> = new Map([['true', true], ['false', false], ['1', true], ['0', false]]);

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Reads the service's settings from an environment, checks every one, and reports all bad ones at once.
 *
 * `cores` is what `WORKERS=auto` means: the cores this process may use, unless told.
 *
 * @throws ConfigError naming each setting whose value is refused.
 * @example loadConfig({ PORT: '8080', PAGINATION: 'page-number' })
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>>, cores: number = availableParallelism()): Config {
  const problems: string[] = [];
  const read = (name: string, fallback: string): string => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? fallback : value.trim();
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const text = read(name, String(fallback));
    if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
      problems.push(`${name}=${JSON.stringify(text)} is not valid: expected a whole number from ${min} to ${max}.`);
      return fallback;
    }
    return Number(text);
  };

  const port = integer('PORT', 8000, 0, 65535);
  const host = read('HOST', '127.0.0.1');
  if (!isIP(host) && !/^[a-zA-Z0-9.-]+$/.test(host)) {
    problems.push(`HOST=${JSON.stringify(host)} is not valid: expected an IP address or a host name.`);
  }

  const databaseUrl = read('DATABASE_URL', 'sqlite:./data/catalogue.db');
  const database = parseDatabaseUrl(databaseUrl);
  if (database === undefined) {
    problems.push(
      `DATABASE_URL=${JSON.stringify(redactPassword(databaseUrl))} is not valid: expected sqlite:PATH, sqlite::memory: or postgres://user@host:port/database.`,
    );
  }
  const dbPoolMax = integer('DB_POOL_MAX', 10, 1, 1000);
  const writeWaitMs = integer('WRITE_WAIT_MS', 3000, 100, 60_000);
  const changeStreamsMax = integer('CHANGE_STREAMS_MAX', 1000, 1, 100_000);
  const changeStreamsMemoryBytes = integer('CHANGE_STREAMS_MEMORY_MB', 32, 1, 65_536) * 2 ** 20;
  const workers = parseWorkers(read('WORKERS', 'auto'), cores, database, problems);

  const pagination = read('PAGINATION', 'limit-offset');
  if (pagination !== 'limit-offset' && pagination !== 'page-number') {
    problems.push(`PAGINATION=${JSON.stringify(pagination)} is not valid: expected limit-offset or page-number.`);
  }
  const maxLimit = integer('MAX_LIMIT', 1000, 1, 100_000);
  const pageSize = integer('PAGE_SIZE', 100, 1, 100_000);
  if (pageSize > maxLimit) {
    problems.push(`PAGE_SIZE=${pageSize} is not valid: it must not be larger than MAX_LIMIT (${maxLimit}).`);
  }

  const corsOrigin = parseCorsOrigin(read('CORS_ORIGIN', '*'));
  if (corsOrigin === undefined) {
    problems.push(
      `CORS_ORIGIN=${JSON.stringify(read('CORS_ORIGIN', '*'))} is not valid: expected * or a comma-separated list of origins such as https://shop.example.`,
    );
  }

  const logLevel = read('LOG_LEVEL', 'info');
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`LOG_LEVEL=${JSON.stringify(logLevel)} is not valid: expected one of ${LOG_LEVELS.join(', ')}.`);
  }

  const apiToken = env['API_TOKEN'] === undefined || env['API_TOKEN'] === '' ? undefined : env['API_TOKEN'];
  if (apiToken !== undefined && !/^[\x21-\x7e]{16,512}$/.test(apiToken)) {
    // The value itself is never echoed: it is a secret.
    problems.push('API_TOKEN is not valid: expected 16 to 512 visible ASCII characters (no spaces), e.g. from `openssl rand -hex 32`.');
  }

  const rateLimitText = read('RATE_LIMIT', '');
  const rateLimit = rateLimitText === '' ? undefined : parseRateLimit(rateLimitText);
  if (rateLimit === null) {
    problems.push(`RATE_LIMIT=${JSON.stringify(rateLimitText)} is not valid: expected COUNT/second, COUNT/minute or COUNT/hour, e.g. 100/minute.`);
  }

  const trustProxyText = read('TRUST_PROXY', '');
  const trustProxy = parseTrustProxy(trustProxyText);
  if (trustProxy === undefined) {
    problems.push(`TRUST_PROXY=${JSON.stringify(trustProxyText)} is not valid: expected a number of proxy hops (1 to 10), or a comma-separated list of proxy addresses or CIDR ranges such as 10.0.0.0/8.`);
  }

  const migrateOnStartText = read('MIGRATE_ON_START', 'true').toLowerCase();
  const migrateOnStart = BOOLEANS.get(migrateOnStartText);
  if (migrateOnStart === undefined) {
    problems.push(`MIGRATE_ON_START=${JSON.stringify(migrateOnStartText)} is not valid: expected true or false.`);
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port,
    host,
    database: database!,
    dbPoolMax,
    writeWaitMs,
    workers,
    changeStreamsMax,
    changeStreamsMemoryBytes,
    pagination: pagination as Pagination,
    pageSize,
    maxLimit,
    corsOrigin: corsOrigin!,
    logLevel,
    apiToken,
    rateLimit: rateLimit ?? undefined,
    trustProxy: trustProxy!,
    migrateOnStart: migrateOnStart!,
  });
}

/** The most workers one machine is given, a bound on a typo rather than on machines. */
const MOST_WORKERS = 256;

function parseWorkers(text: string, cores: number, database: DatabaseLocation | undefined, problems: string[]): number {
  // A database in memory belongs to one process: every worker would serve a catalogue of its own.
  const inMemory = database?.kind === 'sqlite' && database.path === ':memory:';
  if (text.toLowerCase() === 'auto') return inMemory ? 1 : Math.max(1, Math.min(cores, MOST_WORKERS));
  if (!/^[0-9]+$/.test(text) || Number(text) < 1 || Number(text) > MOST_WORKERS) {
    problems.push(`WORKERS=${JSON.stringify(text)} is not valid: expected auto (one per core) or a whole number from 1 to ${MOST_WORKERS}.`);
    return 1;
  }
  if (inMemory && Number(text) > 1) {
    problems.push(`WORKERS=${text} is not valid with DATABASE_URL=sqlite::memory:: a database in memory belongs to one process, so each worker would serve a catalogue of its own. Use WORKERS=1 or a database file.`);
    return 1;
  }
  return Number(text);
}

function parseTrustProxy(text: string): Config['trustProxy'] | undefined {
  if (text === '') return false;
  if (/^[0-9]+$/.test(text)) {
    const hops = Number(text);
    return hops >= 1 && hops <= 10 ? hops : undefined;
  }
  const ranges = text.split(',').map((range) => range.trim());
  const valid = ranges.every((range) => {
    const [address = '', bits, ...rest] = range.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return false;
    return bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
  });
  return valid ? Object.freeze(ranges) : undefined;
}

const WINDOWS_MS: Readonly<Record<string, number>> = { second: 1000, minute: 60_000, hour: 3_600_000 };

function parseRateLimit(text: string): RateLimit | null {
  const match = /^([0-9]{1,9})\s*\/\s*(second|minute|hour)$/.exec(text);
  if (match === null || Number(match[1]) < 1) return null;
  return Object.freeze({ max: Number(match[1]), windowMs: WINDOWS_MS[match[2]!]! });
}

/** Whether a `HOST` value only accepts connections from this machine. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.[0-9]+\.[0-9]+\.[0-9]+$/.test(host);
}

/** What an operator should hear at start: settings that are valid but risky together. */
export function startupWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.apiToken === undefined && !isLoopbackHost(config.host)) {
    warnings.push(`API_TOKEN is not set and HOST=${config.host} accepts connections from other machines: anyone who can reach the service can create products.`);
  }
  return warnings;
}

function parseDatabaseUrl(url: string): DatabaseLocation | undefined {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    return path === '' ? undefined : Object.freeze({ kind: 'sqlite', path });
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    try {
      new URL(url);
      return Object.freeze({ kind: 'postgres', url });
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function parseCorsOrigin(text: string): Config['corsOrigin'] | undefined {
  if (text === '*') return '*';
  const origins = text.split(',').map((origin) => origin.trim());
  for (const origin of origins) {
    try {
      const url = new URL(origin);
      if (url.origin !== origin) return undefined;
    } catch {
      return undefined;
    }
  }
  return Object.freeze(origins);
}

/**
 * Hides a password in a database URL before it is shown in a message or a log: the one after the user
 * name, and the ones pg also takes as query parameters (`password`, `sslpassword`).
 */
export function redactPassword(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:@/]*:)[^@/]*@/, '$1***@').replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
}
