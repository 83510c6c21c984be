import { connect } from 'node:net';
import { randomSource } from '../../bench/data.js';
import { uniqueBarcode } from '../helpers/products.js';

/**
 * A raw-socket fuzzer: valid requests from a small corpus, mutated byte by byte, sent on fresh
 * connections. It reports what a client must never see: a 5xx, an answer that never comes (none in 30 s), a stack
 * trace or SQL or a driver's name in a body, and (checked by the caller against the catalogue) a
 * product stored without its 201 having been sent.
 */
export interface FuzzOptions {
  readonly url: string;
  readonly seed: number;
  readonly count: number;
  /** Connections open at once. */
  readonly concurrency?: number;
}

export interface FuzzResult {
  /** How many answers of each status came back; 0 counts connections closed without an answer. */
  readonly statuses: Map<number, number>;
  /** pks of every product whose 201 reached the client. */
  readonly acknowledged: Set<number>;
  readonly failures: string[];
  readonly elapsedMs: number;
}

/** A bound for an answer that never comes, not a speed: a quiet machine answers in milliseconds. */
const ANSWER_LIMIT_MS = 30_000;
/** With nothing answered after this, the request is taken as incomplete and the client half-closes. */
const NOTHING_YET_MS = 1_000;
/** After some answer, this long without more bytes and the client half-closes. */
const QUIET_MS = 150;

/** Words that must never reach a client: stack frames, SQL, driver and library names, file paths. */
const LEAKS = /\n\s+at |node_modules|SQLITE_|sqlite3|better-sqlite|kysely|\bpg-|postgres|\bselect\b[^"]*\bfrom\b|\binsert into\b|\.ts:\d|\.js:\d/i;

function corpus(): string[] {
  const product = () => JSON.stringify({ name: 'Fuzzed flour 1 kg', barcode: uniqueBarcode(), price: '1.99' });
  const post = (body: string, extra = '') =>
    `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: shop.example\r\n${extra}\r\n`;
  const chunkedBody = product();
  return [
    post(product()),
    post(product(), `Idempotency-Key: fuzz-${uniqueBarcode()}\r\n`),
    post(`{"name": "Price as number", "barcode": "${uniqueBarcode()}", "price": 12.5}`),
    `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `${Buffer.byteLength(chunkedBody).toString(16)}\r\n${chunkedBody}\r\n0\r\n\r\n`,
    get('/api/v1/shop/products'),
    get('/api/v1/shop/product/1'),
    get('/api/v2/shop/products?limit=2&offset=1'),
    get('/api/v2/shop/products?limit=1', 'If-None-Match: "x"\r\n'),
    get('/healthz') + get('/readyz'),
    `OPTIONS /api/v1/shop/product/ HTTP/1.1\r\nHost: shop.example\r\nOrigin: https://till.example\r\n` +
      `Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, idempotency-key\r\n\r\n`,
    `HEAD /api/v1/shop/products HTTP/1.1\r\nHost: shop.example\r\n\r\n`,
    get('/api/v1/shop/product/2') + post(product()),
  ];
}

const INTERESTING = ['\r\n', '\r\n\r\n', '\n', '\0', ':', ' ', '0', '-1', '99999999999', 'Transfer-Encoding: chunked\r\n', 'Content-Length: 5\r\n', 'Host: a\r\n', '{', '"', '%', '\u00ff', '\\u0000'];

function mutate(bytes: Buffer, random: () => number): Buffer {
  let out = bytes;
  const steps = 1 + Math.floor(random() * 3);
  for (let i = 0; i < steps; i++) {
    const at = Math.floor(random() * (out.length + 1));
    const kind = Math.floor(random() * 7);
    if (kind === 0 && out.length > 0) {
      const copy = Buffer.from(out);
      copy[Math.min(at, copy.length - 1)] = Math.floor(random() * 256);
      out = copy;
    } else if (kind === 1) {
      out = Buffer.concat([out.subarray(0, at), Buffer.from(INTERESTING[Math.floor(random() * INTERESTING.length)]!, 'latin1'), out.subarray(at)]);
    } else if (kind === 2) {
      out = Buffer.concat([out.subarray(0, at), out.subarray(Math.min(out.length, at + 1 + Math.floor(random() * 8)))]);
    } else if (kind === 3) {
      out = out.subarray(0, at);
    } else if (kind === 4) {
      const end = Math.min(out.length, at + 1 + Math.floor(random() * 40));
      out = Buffer.concat([out.subarray(0, end), out.subarray(at, end), out.subarray(end)]);
    } else if (kind === 5) {
      const lines = out.toString('latin1').split('\r\n');
      const a = Math.floor(random() * lines.length);
      const b = Math.floor(random() * lines.length);
      [lines[a], lines[b]] = [lines[b]!, lines[a]!];
      out = Buffer.from(lines.join('\r\n'), 'latin1');
    } else {
      out = Buffer.from(out.toString('latin1').replace(/Content-Length: \d+/, `Content-Length: ${Math.floor(random() * 400)}`), 'latin1');
    }
  }
  return out;
}

interface Exchange {
  readonly answer: string;
  readonly firstByteMs: number | undefined;
}

function exchange(url: string, bytes: Buffer): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let firstByteMs: number | undefined;
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    const wait = (ms: number, then: () => void) => {
      clearTimeout(timer);
      timer = setTimeout(then, ms);
    };
    const socket = connect(Number(port), hostname, () => {
      started = performance.now();
      socket.write(bytes);
      wait(NOTHING_YET_MS, () => {
        // Nothing yet: the server waits for the rest of a request. Say there is no more.
        socket.end();
        wait(ANSWER_LIMIT_MS, () => socket.destroy());
      });
    });
    socket.on('data', (chunk: Buffer) => {
      firstByteMs ??= performance.now() - started;
      chunks.push(chunk);
      // Quiet after an answer: say there is no more, and read what the server still owes (a 201 behind
      // a quick first answer can take a commit's time) until it closes.
      wait(QUIET_MS, () => {
        socket.end();
        wait(ANSWER_LIMIT_MS, () => socket.destroy());
      });
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer: Buffer.concat(chunks).toString('latin1'), firstByteMs });
    });
  });
}

/** Every answer in a raw exchange: status and body (as far as its Content-Length says). */
function answersIn(raw: string): Array<{ status: number; body: string }> {
  const answers: Array<{ status: number; body: string }> = [];
  let rest = raw;
  for (;;) {
    const start = rest.search(/HTTP\/1\.[01] \d{3} /);
    if (start === -1) return answers;
    rest = rest.slice(start);
    const headEnd = rest.indexOf('\r\n\r\n');
    const status = Number(rest.slice(9, 12));
    if (headEnd === -1) {
      answers.push({ status, body: '' });
      return answers;
    }
    const length = /\r\ncontent-length: *(\d+)/i.exec(rest.slice(0, headEnd));
    const bodyEnd = length === null ? rest.length : headEnd + 4 + Number(length[1]);
    answers.push({ status, body: rest.slice(headEnd + 4, bodyEnd) });
    rest = rest.slice(Math.max(bodyEnd, 12));
  }
}

/** Sends `count` mutated requests and reports what came back. */
export async function fuzz({ url, seed, count, concurrency = 32 }: FuzzOptions): Promise<FuzzResult> {
  const started = performance.now();
  const statuses = new Map<number, number>();
  const acknowledged = new Set<number>();
  const failures: string[] = [];
  const seeds = corpus().map((text) => Buffer.from(text, 'latin1'));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && failures.length < 10) {
      const index = next++;
      const random = randomSource(seed + index * 7919);
      // Fresh barcodes now and then, so that creates keep succeeding instead of all meeting a 409.
      const base = random() < 0.2 ? Buffer.from(corpus()[Math.floor(random() * seeds.length)]!, 'latin1') : seeds[Math.floor(random() * seeds.length)]!;
      const bytes = random() < 0.05 ? base : mutate(base, random);
      const { answer, firstByteMs } = await exchange(url, bytes);
      const answers = answersIn(answer);
      if (answers.length === 0) statuses.set(0, (statuses.get(0) ?? 0) + 1);
      const problems: string[] = [];
      if (firstByteMs !== undefined && firstByteMs > ANSWER_LIMIT_MS) problems.push(`no answer for ${Math.round(firstByteMs)} ms`);
      for (const { status, body } of answers) {
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status >= 500) problems.push(`status ${status}`);
        if (LEAKS.test(body)) problems.push(`a body gives internals away: ${body.slice(0, 300)}`);
        if (status === 201) {
          const pk = /"pk":(\d+)/.exec(body);
          if (pk !== null) acknowledged.add(Number(pk[1]));
        }
      }
      if (problems.length > 0) {
        failures.push(`seed ${seed}, case ${index}: ${problems.join('; ')}\n  sent: ${JSON.stringify(bytes.toString('latin1'))}\n  got: ${JSON.stringify(answer.slice(0, 600))}`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { statuses, acknowledged, failures, elapsedMs: performance.now() - started };
}

/**
 * Runs the fuzzer against a server and checks the catalogue afterwards: every product stored must
 * have had its 201 sent. Returns every failure, each with the seed and the bytes that caused it.
 */
export async function fuzzAndCheck(options: FuzzOptions): Promise<FuzzResult> {
  const result = await fuzz(options);
  const res = await fetch(`${options.url}/api/v1/shop/products`);
  const stored = (await res.json()) as Array<{ pk: number }>;
  const unacknowledged = stored.map((product) => product.pk).filter((pk) => !result.acknowledged.has(pk));
  if (unacknowledged.length > 0) result.failures.push(`seed ${options.seed}: products stored without their 201 sent: ${unacknowledged.join(', ')}`);
  return result;
}

/** One line of figures for a run. */
export function describeRun(count: number, seed: number, result: FuzzResult): string {
  const statuses = [...result.statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status === 0 ? 'no answer' : status}: ${n}`);
  return `${count} mutated requests (seed ${seed}) in ${(result.elapsedMs / 1000).toFixed(1)} s; ${result.acknowledged.size} products created; answers ${statuses.join(', ')}`;
}
