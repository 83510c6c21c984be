/**
 * `npm run bench -- --slow-readers`: what change-feed streams whose clients never read cost the
 * instance, and whether they hold other requests back. A catalogue of `size` products; first, with no
 * stream open, `connections` clients create products (wrk) while 4 more read product details (wrk),
 * for `duration` seconds, twice: the first run warms the instance up (a fresh one creates faster in
 * its first seconds than after), the second gives the usual rates. Then `streams` streams are opened from version 0 and their
 * clients read nothing, and the same loads run again beside them. Reported: the instance's RSS (every
 * worker) idle, with the streams open, and at its peak under the loads; creates/s and detail p50/p99 in
 * each run; the streams the service closed. Then every stream's client reads: each must get every
 * change of the catalogue exactly once, in order, resuming with Last-Event-ID whenever the service had
 * closed it. Last, every stream closed, the loads run once more, on the catalogue grown by the runs
 * before: the usual rates again, measured after the streams as well as before them. The creates beside
 * the streams are compared with the mean of the runs before and after them, which takes out the drift
 * of a catalogue that grows by every run.
 *
 * As in `--search`, there is no bare-framework baseline: what is measured is the service beside its
 * own streams, so the comparison is the service without them, in the same run.
 */
import { writeFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { randomSource } from './data.js';
import { residentBytes } from './processes.js';
import { megabytes } from './report.js';
import { serveScratchCatalogue } from './seed.js';
import { errorTotal, runWrk, type LoadResult } from './wrk.js';

export interface SlowReadersOptions {
  readonly dist: string;
  /** `undefined`: an SQLite file; otherwise a PostgreSQL server URL to create a scratch database on. */
  readonly database: string | undefined;
  readonly size: number;
  readonly streams: number;
  /** Clients creating products. */
  readonly creators: number;
  /** Seconds of each load. */
  readonly duration: number;
  /** The service's WORKERS: a number, or `auto` (its default). */
  readonly workers: string;
  /** Settings of the environment that would change the service's answers or refuse the load: not passed on. */
  readonly leftOut: readonly string[];
}

const CREATE_PATH = '/api/v1/shop/product/';
/** Clients reading product details beside the creates: the latency the streams must not hold back. */
const READERS = 4;
/** Distinct detail URLs, spread over the catalogue. */
const DETAILS = 10_000;
/** Barcode numbers each run of the creates may use (wrk/create.lua numbers them from a start). */
const BARCODES_PER_RUN = 100_000_000;

/** Seeds a catalogue, runs the loads without and beside the streams, checks the streams; returns the exit code. */
export async function runSlowReaders(options: SlowReadersOptions): Promise<number> {
  const { work, kind, port, pid, close } = await serveScratchCatalogue(options.dist, options.database, options.size, {
    ...Object.fromEntries(options.leftOut.map((name) => [name, undefined])),
    WORKERS: options.workers,
    CHANGE_STREAMS_MAX: String(Math.max(1000, options.streams)),
  });
  const readers: PausedReader[] = [];
  try {
    const base = `http://127.0.0.1:${port}`;
    const random = randomSource(37);
    const details = join(work, 'details.paths');
    writeFileSync(details, `${Array.from({ length: DETAILS }, () => `/api/v1/shop/product/${1 + Math.floor(random() * options.size)}`).join('\n')}\n`);
    const loads = async (run: number): Promise<{ creates: LoadResult; reads: LoadResult }> => {
      const wrk = { port, pid, threads: 1, seconds: options.duration, headers: {} };
      const [creates, reads] = await Promise.all([
        runWrk({ ...wrk, headers: { 'Content-Type': 'application/json' }, connections: options.creators, script: 'create', args: [CREATE_PATH, String(1 + run * BARCODES_PER_RUN), String(BARCODES_PER_RUN)] }),
        runWrk({ ...wrk, connections: READERS, script: 'paths', args: [details, String(run)] }),
      ]);
      return { creates, reads };
    };

    // Not compared: the first seconds of a fresh instance create faster than the next (PostgreSQL, the
    // loads twice with nothing between: 1,024 then 765/s, 1,232 then 800/s).
    const warmUp = await loads(3);
    const quiet = await loads(0);
    const idle = residentBytes(pid);
    for (let i = 0; i < options.streams; i++) readers.push(new PausedReader(base));
    const statuses = await Promise.all(readers.map((reader) => reader.open()));
    const refused = statuses.filter((status) => status !== 200).length;
    const open = residentBytes(pid);
    const beside = await loads(1);
    const dropped = await droppedStreams(base);

    const expected = await allVersions(base);
    await Promise.all(readers.filter((reader) => reader.status === 200).map((reader) => reader.readAll(expected)));
    const failed = readers.filter((reader) => reader.failure !== undefined);
    const reconnections = readers.reduce((sum, reader) => sum + reader.reconnections, 0);
    // The loads once more with every stream closed: the catalogue has grown by the creates of the runs
    // before, and a database slows as it grows and ages (PostgreSQL's indexes, its vacuum), so that what
    // the streams cost is the run beside them against this one as well as the first.
    for (const reader of readers) reader.close();
    await untilNoStreamOpen(base);
    const after = await loads(2);

    const peak = Math.max(beside.creates.peakRss, beside.reads.peakRss);
    console.log(`Change-feed streams that never read: ${options.size.toLocaleString('en')} products on ${kind}, WORKERS=${options.workers}, ` +
      `${options.streams.toLocaleString('en')} streams from version 0, ${options.creators} clients creating and ${READERS} reading details for ${options.duration} s; Node ${process.version}.\n`);
    console.log('| run | creates/s | detail p50 ms | detail p99 ms | RSS, every process | errors |');
    console.log('|---|---|---|---|---|---|');
    const row = (name: string, load: { creates: LoadResult; reads: LoadResult }, rss: string): void =>
      console.log(`| ${name} | ${Math.round(load.creates.requestsPerSecond).toLocaleString('en')} | ${load.reads.p50Ms.toFixed(2)} | ${load.reads.p99Ms.toFixed(2)} | ${rss} | ${errorTotal(load.creates.errors) + errorTotal(load.reads.errors)} |`);
    row('no stream, first run (warms the instance up; not compared)', warmUp, '');
    row('no stream', quiet, `${megabytes(idle)} after it (idle)`);
    row(`${options.streams.toLocaleString('en')} streams not reading`, beside, `${megabytes(open)} with them open, peak ${megabytes(peak)}: **+${megabytes(peak - idle)}** over idle`);
    row('no stream, again (every stream closed)', after, megabytes(residentBytes(pid)));
    const usual = (quiet.creates.requestsPerSecond + after.creates.requestsPerSecond) / 2;
    console.log(`\nCreates beside the streams: ${(beside.creates.requestsPerSecond / usual).toFixed(2)} × the mean of the runs before and after them (${Math.round(usual).toLocaleString('en')}/s).`);
    console.log(`\nStreams: ${options.streams - refused} answered 200${refused > 0 ? `, ${refused} refused` : ''}; closed by the service while their clients read nothing: ${dropped.memory} past the memory budget, ${dropped.slow} slow on their own.`);
    console.log(`Then every client read: ${options.streams - refused - failed.length} of ${options.streams - refused} got each of the ${expected.length.toLocaleString('en')} changes exactly once, in order (${reconnections} reconnections with Last-Event-ID).`);
    console.log('Targets: RSS at most +128 MB over idle, detail p99 at most 20 ms, creates at their usual rate, every stream exact.');
    for (const reader of failed.slice(0, 10)) console.error(`stream failed: ${reader.failure}`);
    const errors = [warmUp, quiet, beside, after].reduce((sum, load) => sum + errorTotal(load.creates.errors) + errorTotal(load.reads.errors), 0);
    if (errors > 0) console.error(`\n${errors} requests failed (status 400 or more, or the connection).`);
    return failed.length > 0 || refused > 0 || errors > 0 ? 1 : 0;
  } finally {
    for (const reader of readers) reader.close();
    await close();
  }
}

/** Waits until the service counts no change stream open (it sees a closed connection a moment later). */
async function untilNoStreamOpen(base: string): Promise<void> {
  for (let tries = 0; tries < 600; tries++) {
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const open = /^catalogue_change_streams (\d+)$/m.exec(metrics);
    if (open === null) throw new Error('/metrics has no catalogue_change_streams');
    if (Number(open[1]) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('change streams still open 60 s after every client closed its own');
}

/** Every change's version from 0, in order, read through the pages of the feed. */
async function allVersions(base: string): Promise<number[]> {
  const versions: number[] = [];
  for (let url: string | null = `${base}/api/v2/shop/changes?since=0&limit=10000`; url !== null; ) {
    const page = (await (await fetch(url)).json()) as { changes: Array<{ version: number }>; next: string | null };
    for (const change of page.changes) versions.push(change.version);
    url = page.next;
  }
  return versions;
}

/** The streams the service closed for their clients' sake, by reason, from its metrics. */
async function droppedStreams(base: string): Promise<{ memory: number; slow: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const count = (reason: string): number => Number(new RegExp(`^catalogue_change_streams_dropped_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { memory: count('memory'), slow: count('slow') };
}

/**
 * A client of the feed that opens its stream from version 0 and reads nothing until `readAll`; then it
 * reads every event, checking each change against the versions expected, and reconnects with
 * Last-Event-ID whenever the service has closed its stream, until it has had the last change.
 */
class PausedReader {
  readonly #base: string;
  #response: IncomingMessage | undefined;
  /** The id of the last whole event read: where a reconnection resumes. */
  #lastId: string | undefined;
  status = 0;
  reconnections = 0;
  failure: string | undefined;

  constructor(base: string) {
    this.#base = base;
  }

  /** Opens the stream and leaves it unread; resolves with its status. */
  async open(): Promise<number> {
    this.#response = await this.#request();
    this.#response.pause();
    this.status = this.#response.statusCode ?? 0;
    return this.status;
  }

  /** Reads the stream (and its reconnections) until every expected change has come, or one came wrong. */
  async readAll(expected: readonly number[]): Promise<void> {
    let next = 0;
    while (next < expected.length && this.failure === undefined) {
      if (this.#response === undefined) {
        this.reconnections += 1;
        this.#response = await this.#request();
        if (this.#response.statusCode !== 200) {
          // Every place is taken until the service hears of the closed streams: as the answer says, a second later.
          this.#response.resume();
          this.#response = undefined;
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
      }
      const response = this.#response;
      // Closed already, while it was not read: the service resets a stream it closes, which a client
      // that reads nothing can hear of before it reads (its 'close' has come and gone). It resumes.
      if (response.destroyed) {
        this.#response = undefined;
        continue;
      }
      await new Promise<void>((resolve) => {
        let pending = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          pending += chunk;
          let start = 0;
          for (let end = pending.indexOf('\n\n'); end !== -1; end = pending.indexOf('\n\n', start)) {
            next = this.#take(pending.slice(start, end), expected, next);
            start = end + 2;
            if (next === expected.length || this.failure !== undefined) {
              response.destroy();
              return;
            }
          }
          // An event cut by the end of the connection is never taken: it comes again after Last-Event-ID.
          pending = pending.slice(start);
        });
        response.once('close', resolve);
        response.resume();
      });
      this.#response = undefined;
    }
  }

  close(): void {
    this.#response?.destroy();
  }

  /** Checks one whole event; returns the index of the change expected next. */
  #take(event: string, expected: readonly number[], next: number): number {
    let id: string | undefined;
    let kind = 'message';
    for (const line of event.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) kind = line.slice(7);
    }
    if (id !== undefined) this.#lastId = id;
    if (kind !== 'change') return next;
    if (Number(id) !== expected[next]) this.failure = `change ${id} came where ${expected[next] ?? 'none'} was due (after ${this.reconnections} reconnections)`;
    return next + 1;
  }

  #request(): Promise<IncomingMessage> {
    const headers: Record<string, string> = { Accept: 'text/event-stream' };
    if (this.#lastId !== undefined) headers['Last-Event-ID'] = this.#lastId;
    return new Promise((resolve, reject) => {
      get(`${this.#base}/api/v2/shop/changes?since=0`, { headers, agent: false }, (response) => {
        // A stream the service closes ends with an error ('aborted'): its 'close' is what counts here.
        response.on('error', () => undefined);
        resolve(response);
      }).on('error', reject);
    });
  }
}
