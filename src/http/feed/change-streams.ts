import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseShut } from '../../catalogue/errors.js';
import type { CatalogueStore, Change } from '../../storage/store.js';
import { Turns } from '../../turns.js';
import { CatchUpPace } from './catch-up-pace.js';
import { type SharedStreamCount, StreamMemory } from './stream-memory.js';
import { changeWire } from '../contract/wire.js';
import { whenConnectionGone } from '../connection/connection-gone.js';

/** Changes read per query, while a stream catches up and while new ones are passed on. */
const CHANGES_PER_READ = 1_000;

/** How often the streams' source looks for new changes (a cheap check: no query while nothing changed). */
const POLL_MS = 50;

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/**
 * Bytes a live stream may hold unsent for a client that reads slowly; past it the client is
 * disconnected (it resumes with Last-Event-ID). A stream catching up holds at most its last page.
 */
const UNSENT_LIMIT_BYTES = 1024 * 1024;

/** While catching up, a client that has not taken the whole of its last page this long after it was sent is disconnected. */
const STALLED_MS = 30_000;

/**
 * The share of a worker's time that sending the streams catching up may take while it has other
 * requests to answer (catch-up-pace.ts), after a burst of 50 ms of sending (some 5 MB here). On a
 * 2-core VM, sending a megabyte to a socket took 6-13 ms of CPU, most of it in the kernel: at a tenth
 * of a worker, a till catching up on 100,000 products (15-30 MB) while others are served takes a few
 * seconds, and a thousand at once share that tenth instead of the workers' cores.
 */
const CATCH_UP_SHARE = 0.1;
const CATCH_UP_BURST_MS = 50;

const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');

/** After a client ends its side of the connection, the second write that finds out whether it is gone. */
const PROBE_AFTER_END_MS = 100;

/** The pause EventSource makes before reconnecting, which the stream asks for. */
const RECONNECT_MS = 2_000;

export interface ChangeStreamsOptions {
  /** Most streams open at once in this instance (across its workers, with `shared`). */
  readonly max: number;
  /**
   * Most bytes the instance's streams hold at once for clients that have not taken them (across its
   * workers, with `shared`); past it the streams whose clients have been behind longest are closed.
   */
  readonly memoryBudget: number;
  /** The count kept for every worker of the instance; this process's own count without it. */
  readonly shared?: SharedStreamCount | undefined;
  /**
   * How many requests this process has answered so far: while the count moves, what the streams
   * catching up are sent is paced (catch-up-pace.ts). Without it, they are never paced.
   */
  readonly answered?: () => number;
  /** For tests: how often to send the keep-alive comment. */
  readonly heartbeatMs?: number;
}

/**
 * A page of changes read for the streams catching up, its events written once for all of them. It
 * keeps the bytes alone, not the changes: streams wait for their clients with it in hand.
 */
interface CatchUpPage {
  /** The catalogue's identity in the snapshot the page was read from. */
  readonly catalogue: string;
  /** Every change's event, in order, as the bytes each stream at that version is sent. */
  readonly events: Buffer;
  /** The version of the page's last change; `undefined` when it has none. */
  readonly last: number | undefined;
  /** The catalogue's version in the snapshot the page was read from. */
  readonly version: number;
  /** Whether changes after the last one were left out for the limit. */
  readonly more: boolean;
}

/** The answers that are streams, until they are gone. */
const streamAnswers = new WeakSet<object>();

/**
 * Whether an answer is a change stream: its end is no sign of other requests being answered, which
 * pace the streams catching up (a thousand streams closed for the budget would otherwise pace their own
 * catching up again).
 */
export function isChangeStream(answer: object): boolean {
  return streamAnswers.has(answer);
}

/** Why the service closed a stream: past the instance's memory budget, or behind on its own. */
export type DropReason = 'memory' | 'slow';

/** One client following the feed. */
interface Stream {
  readonly body: PassThrough;
  readonly socket: FastifyRequest['socket'];
  /** The version of the last change it was sent (or it started after). */
  position: number;
  /** The catalogue's identity it was told at its start; `undefined` until its first read. */
  catalogue?: string;
  live: boolean;
  closed: boolean;
  /** When the oldest byte it holds unsent was written (performance.now). */
  behindSince: number;
  /** Bytes written since then, and the most of them in one write: see `held`. */
  writtenSince: number;
  largestSince: number;
}

/**
 * The live change feed: server-sent events for every change after a starting point, by any writer.
 * Each stream first catches up on its own (pages of changes from the database, the next read only
 * once its client has taken the last), says `caught-up`, then joins the live streams. One source
 * serves every live stream: when the catalogue changes (the store's cache generation moves:
 * PostgreSQL's notification, SQLite's data_version) it reads the new changes once, serializes them
 * once, and writes them to every live stream that has not had them. A live client that lets more than
 * UNSENT_LIMIT_BYTES pile up is disconnected rather than buffered without end, and so are, past the
 * instance's memory budget, the clients behind longest (stream-memory.ts); each resumes from its
 * Last-Event-ID.
 */
export class ChangeStreams {
  readonly #store: CatalogueStore;
  /** Most streams open at once. */
  readonly max: number;
  readonly #all = new Set<Stream>();
  readonly #shared: SharedStreamCount | undefined;
  /** Streams claimed here and not yet followed (nor given back). */
  #claimed = 0;
  readonly #live = new Set<Stream>();
  /** The version up to which the live source has read changes. */
  #head = 0;
  #generation: number | undefined;
  #reading = false;
  #poll: NodeJS.Timeout | undefined;
  readonly #heartbeat: NodeJS.Timeout;
  /**
   * The catching up streams' work, one piece at a time with a turn of the event loop between: each
   * page read, and each page written to one stream. A burst of new streams (every till of a shop
   * reconnecting) would otherwise take every database connection, and its reads would wait for one
   * past the pool's limit and fail, with the stream already answered 200; and a page written to a
   * thousand streams at once would hold every other request up meanwhile.
   */
  readonly #catchUpTurns = new Turns(undefined, isDatabaseShut);
  /** The sending of the streams catching up, paced in their turns: each page waits until the pages before have had their time. */
  readonly #catchUpPace: CatchUpPace;
  /** Catch-up reads queued or running, by the version they read after: streams there share one. */
  readonly #readsAfter = new Map<number, Promise<CatchUpPage>>();
  /**
   * Whole pages read (more follow them), by the version they start after, for as long as they are in
   * memory anyway (a stream still has one in hand): a stream that reaches that version later is sent
   * the same bytes, as if it had come in time for that read. Nothing is kept for them.
   */
  readonly #pagesAfter = new Map<number, WeakRef<CatchUpPage>>();
  readonly #pagesGone = new FinalizationRegistry<number>((version) => {
    if (this.#pagesAfter.get(version)?.deref() === undefined) this.#pagesAfter.delete(version);
  });
  readonly #memory: StreamMemory<Stream>;
  /** Streams closed for being slow on their own (not for the instance's budget), since the start. */
  #droppedSlow = 0;

  constructor(store: CatalogueStore, { max, memoryBudget, shared, answered = () => 0, heartbeatMs = HEARTBEAT_MS }: ChangeStreamsOptions) {
    this.#store = store;
    this.#catchUpPace = new CatchUpPace({ share: CATCH_UP_SHARE, burstMs: CATCH_UP_BURST_MS, answered });
    this.max = max;
    this.#shared = shared;
    this.#memory = new StreamMemory({ budget: memoryBudget, shared, streams: () => this.#all, held, close: (stream) => this.#disconnect(stream) });
    this.#heartbeat = setInterval(() => this.#beat(), heartbeatMs);
    this.#heartbeat.unref();
  }

  /** Streams open now, catching up or live. */
  get open(): number {
    return this.#all.size;
  }

  /** Bytes this process's streams hold for clients that have not taken them yet. */
  get held(): number {
    return this.#memory.held();
  }

  /** Streams the service closed because their clients did not take what they were sent, by reason, since the start. */
  get dropped(): Readonly<Record<DropReason, number>> {
    return { memory: this.#memory.closedForRoom, slow: this.#droppedSlow };
  }

  /**
   * Gives back up to `bytes` of this process's share of the streams' memory, closing the streams whose
   * clients have been behind longest as needed: another worker's streams need room.
   */
  shed(bytes: number): number {
    return this.#memory.shed(bytes);
  }

  /**
   * Takes room for one more stream: false when the instance holds `max` already. A claim is followed
   * (`follow`) or given back (`release`).
   */
  async claim(): Promise<boolean> {
    // A count the primary cannot give now (it is stopped, or gone and this worker with it) is no room.
    if (this.#shared !== undefined) return this.#shared.claimStream(this.max).catch(() => false);
    if (this.#all.size + this.#claimed >= this.max) return false;
    this.#claimed += 1;
    return true;
  }

  /** Gives back a claim that was not followed. */
  release(): void {
    if (this.#shared !== undefined) this.#shared.releaseStream();
    else this.#claimed -= 1;
  }

  /**
   * Answers `request` with the stream of every change after version `since`, until the client goes
   * away or the service stops. It takes the room `claim` gave. The first page of changes is read before
   * the answer starts: a database that cannot be read now (away, or shut to readers by a lock) is the
   * 503 any read gets, with its Retry-After, not a stream that opens and then breaks; the room is
   * given back then.
   */
  async follow(request: FastifyRequest, reply: FastifyReply, since: number): Promise<FastifyReply> {
    let first: CatchUpPage;
    try {
      first = await this.#readAfter(since);
    } catch (error) {
      this.release();
      throw error;
    }
    const body = new PassThrough();
    const stream: Stream = { body, socket: request.socket, position: since, live: false, closed: false, behindSince: 0, writtenSince: 0, largestSince: 0 };
    if (this.#shared === undefined) this.#claimed -= 1;
    this.#all.add(stream);
    streamAnswers.add(reply.raw);
    const close = (): void => this.#forget(stream);
    // The answer closes when it ends or its connection goes (a request's own 'close' says only that it was read).
    reply.raw.once('close', close);
    // A client that goes away sends its end of the connection, which the server keeps open for answers
    // still owed (a half-closed client may still be reading). Writing tells: a client that is gone
    // answers the bytes with a reset, which closes the connection; one still reading takes them.
    request.socket.once('end', () => {
      write(stream, ': ping\n\n');
      setTimeout(() => write(stream, ': ping\n\n'), PROBE_AFTER_END_MS).unref();
    });
    body.once('close', close);
    // A stream queued behind another answer on its connection (pipelined) hears nothing of the above when
    // the connection goes: it held its place among CHANGE_STREAMS_MAX until dropped as stalled (30 s).
    whenConnectionGone(request.raw, () => body.destroy());
    write(stream, `retry: ${RECONNECT_MS}\n\n`);
    void this.#catchUp(stream, first).catch((error: unknown) => (error instanceof StalledError ? this.#dropSlow(stream) : this.#disconnect(stream)));
    return asEventStream(reply).send(body);
  }

  /**
   * Closes every stream at once: the service is stopping. Clients reconnect to another instance. Each is
   * reset, as one closed for the budget is: ended, a stream whose client has not read what it was sent
   * would hold the stop until its time limit while that is still the process's, and once it is the
   * kernel's, leave it there after the process (FIN-WAIT-1), offered for minutes. A client loses nothing
   * it took whole: it resumes after its last whole event.
   */
  closeAll(): void {
    clearInterval(this.#heartbeat);
    this.#stopPolling();
    for (const stream of this.#all) this.#disconnect(stream);
  }

  /**
   * Sends the stream every change after its position, a page at a time, each once the client has
   * taken the last, then `caught-up`, and makes it live. The live source may have read further
   * meanwhile: then the stream catches up again before it joins, so that it misses nothing in between.
   */
  async #catchUp(stream: Stream, first?: CatchUpPage): Promise<void> {
    let read = first;
    while (!stream.closed) {
      const page = read ?? (await this.#readAfter(stream.position));
      read = undefined;
      if (stream.closed || !sameCatalogue(stream, page)) return;
      if (page.events.length > 0 && !(await this.#catchUpTurns.run(() => this.#writePage(stream, page.events)))) return;
      if (page.last !== undefined) stream.position = page.last;
      if (page.more) {
        await this.#taken(stream);
        continue;
      }
      // Nothing more up to the catalogue's version: a removal left out (from 0) or a change replaced
      // by a later one leaves no gap a client must fill, so the stream stands at that version.
      stream.position = Math.max(stream.position, page.version);
      if (this.#live.size > 0 && stream.position < this.#head) continue;
      write(stream, `id: ${stream.position}\nevent: caught-up\ndata: ${JSON.stringify({ version: stream.position, catalogue_id: stream.catalogue })}\n\n`);
      if (this.#live.size === 0) {
        this.#head = stream.position;
        this.#generation = undefined;
      }
      stream.live = true;
      this.#live.add(stream);
      this.#startPolling();
      return;
    }
  }

  /**
   * Writes a page's events to the stream once the instance's streams have room for them: false when
   * they have none even after closing those behind longest, and the stream, past the budget, is
   * closed (it has taken everything before, and resumes with Last-Event-ID).
   */
  async #writePage(stream: Stream, events: Buffer): Promise<boolean> {
    if (stream.closed) return false;
    await this.#catchUpPace.ready();
    if (stream.closed) return false;
    if (!(await this.#memory.makeRoom(events.length, stream))) {
      if (!stream.closed) this.#memory.closeForRoom(stream);
      return false;
    }
    const started = performance.now();
    write(stream, events);
    // A response writes to its socket in a tick of its own (Node corks it while it is written): the
    // kernel's copy of the page, most of what sending costs, is done once that tick has run.
    process.nextTick(() => this.#catchUpPace.spent(performance.now() - started));
    return true;
  }

  /**
   * The changes after `version`, read in turn with the other streams catching up, or with the stream
   * that asked first for the same, or read before for another stream. A read that began before a
   * stream came is as good as its own: the stream goes on from the version that read stood at, and
   * misses nothing after it. Only whole pages are taken from before: the last page of a catch-up,
   * which says where the catalogue stands, is always read anew.
   */
  #readAfter(version: number): Promise<CatchUpPage> {
    const kept = this.#pagesAfter.get(version)?.deref();
    if (kept !== undefined) return Promise.resolve(kept);
    let read = this.#readsAfter.get(version);
    if (read === undefined) {
      read = this.#catchUpTurns.run(async () => {
        const { changes, version: at, more, catalogue } = await this.#store.readChanges(version, CHANGES_PER_READ);
        const page = { catalogue, events: Buffer.from(changes.map(changeEvent).join('')), last: changes.at(-1)?.version, version: at, more };
        if (more) {
          this.#pagesAfter.set(version, new WeakRef(page));
          this.#pagesGone.register(page, version);
        }
        return page;
      });
      this.#readsAfter.set(version, read);
      const forget = (): void => void this.#readsAfter.delete(version);
      read.then(forget, forget);
    }
    return read;
  }

  /**
   * Resolves once the client has taken everything written to it (the kernel's socket buffer took the
   * last byte); rejects when that has not happened within STALLED_MS.
   */
  async #taken(stream: Stream): Promise<void> {
    if (stream.closed || unsent(stream) === 0) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new StalledError());
      }, STALLED_MS);
      const check = (): void => {
        if (!stream.closed && unsent(stream) > 0) return;
        stop();
        resolve();
      };
      // Bytes leave the answer's stream for the socket on 'data', which the socket may take at once
      // (no 'drain' then): looked at once that write is done.
      const afterData = (): void => void setImmediate(check);
      const stop = (): void => {
        clearTimeout(timer);
        stream.socket.off('drain', check);
        stream.socket.off('close', check);
        stream.body.off('drain', check);
        stream.body.off('data', afterData);
      };
      stream.socket.on('drain', check);
      stream.socket.on('close', check);
      stream.body.on('drain', check);
      stream.body.on('data', afterData);
    });
  }

  #startPolling(): void {
    this.#poll ??= setInterval(() => void this.#pollChanges(), POLL_MS);
  }

  #stopPolling(): void {
    clearInterval(this.#poll);
    this.#poll = undefined;
  }

  /** Reads the changes after the live head when the catalogue changed, and sends them to every live stream. */
  async #pollChanges(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    try {
      const generation = await this.#store.cacheGeneration();
      if (generation === this.#generation) return;
      this.#generation = generation;
      for (;;) {
        const page = await this.#store.readChanges(this.#head, CHANGES_PER_READ);
        for (const stream of this.#live) sameCatalogue(stream, page);
        if (page.changes.length > 0) this.#sendLive(page.changes);
        this.#head = Math.max(this.#head, page.changes.at(-1)?.version ?? this.#head);
        // After each page: a burst of changes (an import) must not pile up in every stream before it.
        await this.#memory.settle();
        if (!page.more) return;
      }
    } catch {
      // The database is away: the next poll tries again, and the generation is read again.
      this.#generation = undefined;
    } finally {
      this.#reading = false;
    }
  }

  /**
   * Writes new changes to every live stream that has not had them, as one write of bytes serialized
   * once for all of them; a stream that joined since has had some, and gets the rest.
   */
  #sendLive(changes: readonly Change[]): void {
    const events = changes.map(changeEvent);
    const bytes = Buffer.from(events.join(''));
    const starts: number[] = [];
    let offset = 0;
    for (const event of events) {
      starts.push(offset);
      offset += Buffer.byteLength(event);
    }
    const last = changes.at(-1)!.version;
    for (const stream of this.#live) {
      if (stream.position >= last) continue;
      const first = changes.findIndex((change) => change.version > stream.position);
      stream.position = last;
      if (unsent(stream) > UNSENT_LIMIT_BYTES) this.#dropSlow(stream);
      else write(stream, first === 0 ? bytes : bytes.subarray(starts[first]));
    }
  }

  #beat(): void {
    for (const stream of this.#all) write(stream, KEEP_ALIVE);
  }

  /** Forgets a stream that has closed (or is being closed), giving back its place. */
  #forget(stream: Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.#shared?.releaseStream();
    this.#all.delete(stream);
    this.#live.delete(stream);
    if (this.#live.size === 0) this.#stopPolling();
  }

  /** Drops a client that falls behind on its own (too much unsent, or stalled); it resumes from its Last-Event-ID. */
  #dropSlow(stream: Stream): void {
    this.#droppedSlow += 1;
    this.#disconnect(stream);
  }

  /**
   * Closes a stream at once (what it holds is freed now); its client resumes from its Last-Event-ID.
   * With a reset: a plain close leaves what the kernel holds for a client that reads nothing (megabytes
   * of events a connection) in the kernel, which keeps trying to deliver it for minutes; a reset frees
   * it at once. The client has lost nothing it took whole: it resumes after its last whole event.
   */
  #disconnect(stream: Stream): void {
    this.#forget(stream);
    stream.socket.resetAndDestroy();
    stream.body.destroy();
  }
}

/**
 * Tells a stream the catalogue's identity with its first read (`event: catalogue`); ends it when a
 * later read finds another (a restore cut the history): the client, reconnecting, is told the new one
 * and starts its copy again.
 */
function sameCatalogue(stream: Stream, page: { readonly catalogue: string }): boolean {
  if (stream.catalogue === undefined) {
    stream.catalogue = page.catalogue;
    write(stream, `event: catalogue\ndata: ${JSON.stringify({ catalogue_id: page.catalogue })}\n\n`);
  }
  if (stream.catalogue === page.catalogue) return true;
  stream.body.end();
  return false;
}

/** A client that took nothing of what it was sent for STALLED_MS. */
class StalledError extends Error {}

function changeEvent(change: Change): string {
  return `id: ${change.version}\nevent: change\ndata: ${JSON.stringify(changeWire(change))}\n\n`;
}

/**
 * Writes to the stream's answer, unless it has closed. A stream that held nothing is behind from now
 * until its client takes this.
 */
function write(stream: Stream, data: string | Uint8Array): void {
  if (stream.closed || stream.body.writableEnded) return;
  const bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
  if (unsent(stream) === 0) {
    stream.behindSince = performance.now();
    stream.writtenSince = 0;
    stream.largestSince = 0;
  }
  stream.writtenSince += bytes;
  stream.largestSince = Math.max(stream.largestSince, bytes);
  stream.body.write(data);
}

/**
 * The memory a stream holds for its client: what it has not taken, and the whole of the write its
 * client is taking now, which stays in memory until its last byte is taken (a page is one write).
 * Everything written before the client last had taken it all is freed.
 */
function held(stream: Stream): number {
  const left = unsent(stream);
  return left === 0 ? 0 : Math.min(left + stream.largestSince, stream.writtenSince);
}

/**
 * Bytes written for the client that it has not taken yet, in this process: in the answer's stream (on
 * its way in, and on its way out to the socket) and the socket's own buffer.
 */
function unsent(stream: Stream): number {
  return stream.body.writableLength + stream.body.readableLength + stream.socket.writableLength;
}

/** The status and headers of a change stream, which a HEAD asking for one gets too. */
export function asEventStream(reply: FastifyReply): FastifyReply {
  return (
    reply
      .code(200)
      .type('text/event-stream; charset=utf-8')
      .header('Cache-Control', 'no-store')
      // Proxies that buffer answers (nginx) would hold every event back.
      .header('X-Accel-Buffering', 'no')
  );
}
