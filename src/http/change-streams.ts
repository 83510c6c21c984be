import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueStore, Change, ChangePage } from '../storage/store.js';
import { Turns } from '../turns.js';
import { changeWire } from './wire.js';

/** Changes read per query, while a stream catches up and while new ones are passed on. */
const CHANGES_PER_READ = 1_000;

/** How often the streams' source looks for new changes (a cheap check: no query while nothing changed). */
const POLL_MS = 50;

/** A comment line this often keeps proxies and load balancers from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/**
 * Bytes an answer may hold unsent for a client that reads slowly. Past it, while caught up, the client
 * is disconnected (it resumes with Last-Event-ID); while catching up, the stream waits for it to read.
 */
const UNSENT_LIMIT_BYTES = 1024 * 1024;

/** While catching up, a client that reads nothing for this long is disconnected. */
const STALLED_MS = 30_000;

/** After a client ends its side of the connection, the second write that finds out whether it is gone. */
const PROBE_AFTER_END_MS = 100;

/** The pause EventSource makes before reconnecting, which the stream asks for. */
const RECONNECT_MS = 2_000;

/** Where the count of open streams is kept when several worker processes share one instance's `max`. */
export interface SharedStreamCount {
  claimStream(max: number): Promise<boolean>;
  releaseStream(): void;
}

export interface ChangeStreamsOptions {
  /** Most streams open at once in this instance (across its workers, with `shared`). */
  readonly max: number;
  /** The count kept for every worker of the instance; this process's own count without it. */
  readonly shared?: SharedStreamCount | undefined;
  /** For tests: how often to send the keep-alive comment. */
  readonly heartbeatMs?: number;
}

/** A page of changes read for the streams catching up, each change's event written once for all of them. */
interface CatchUpPage {
  readonly page: ChangePage;
  readonly events: readonly string[];
}

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
}

/**
 * The live change feed: server-sent events for every change after a starting point, by any writer.
 * Each stream first catches up on its own (pages of changes from the database, sent as the client
 * reads them), says `caught-up`, then joins the live streams. One source serves every live stream:
 * when the catalogue changes (the store's cache generation moves: PostgreSQL's notification, SQLite's
 * data_version) it reads the new changes once, serializes each once, and writes it to every live
 * stream that has not had it. A live client that lets more than UNSENT_LIMIT_BYTES pile up is
 * disconnected rather than buffered without end; it resumes from its Last-Event-ID.
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
   * The catching up streams' reads, one at a time: a burst of new streams (every till of a shop
   * reconnecting) would otherwise take every database connection, and its reads would wait for one
   * past the pool's limit and fail, with the stream already answered 200.
   */
  readonly #catchUpReads = new Turns();
  /** Catch-up reads queued or running, by the version they read after: streams there share one. */
  readonly #readsAfter = new Map<number, Promise<CatchUpPage>>();

  constructor(store: CatalogueStore, { max, shared, heartbeatMs = HEARTBEAT_MS }: ChangeStreamsOptions) {
    this.#store = store;
    this.max = max;
    this.#shared = shared;
    this.#heartbeat = setInterval(() => this.#beat(), heartbeatMs);
    this.#heartbeat.unref();
  }

  /** Streams open now, catching up or live. */
  get open(): number {
    return this.#all.size;
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
   * away or the service stops. It takes the room `claim` gave.
   */
  follow(request: FastifyRequest, reply: FastifyReply, since: number): FastifyReply {
    const body = new PassThrough();
    const stream: Stream = { body, socket: request.socket, position: since, live: false, closed: false };
    if (this.#shared === undefined) this.#claimed -= 1;
    this.#all.add(stream);
    const close = (): void => {
      if (stream.closed) return;
      stream.closed = true;
      this.#shared?.releaseStream();
      this.#all.delete(stream);
      this.#live.delete(stream);
      if (this.#live.size === 0) this.#stopPolling();
    };
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
    body.write(`retry: ${RECONNECT_MS}\n\n`);
    void this.#catchUp(stream).catch(() => this.#disconnect(stream));
    return reply
      .code(200)
      .type('text/event-stream; charset=utf-8')
      .header('Cache-Control', 'no-store')
      // Proxies that buffer answers (nginx) would hold every event back.
      .header('X-Accel-Buffering', 'no')
      .send(body);
  }

  /** Ends every stream at once: the service is stopping. Clients reconnect to another instance. */
  closeAll(): void {
    clearInterval(this.#heartbeat);
    this.#stopPolling();
    for (const stream of this.#all) stream.body.end();
  }

  /**
   * Sends the stream every change after its position, a page at a time as the client reads them,
   * then `caught-up`, and makes it live. The live source may have read further meanwhile: then the
   * stream catches up again before it joins, so that it misses nothing in between.
   */
  async #catchUp(stream: Stream): Promise<void> {
    for (;;) {
      const { page, events } = await this.#readAfter(stream.position);
      if (stream.closed || !sameCatalogue(stream, page)) return;
      for (const event of events) write(stream, event);
      if (page.changes.length > 0) stream.position = page.changes.at(-1)!.version;
      if (page.more) {
        await this.#readable(stream);
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
   * The changes after `version`, read in turn with the other streams catching up, or with the stream
   * that asked first for the same. A read that began before a stream came is as good as its own: the
   * stream goes on from the version that read stood at, and misses nothing after it.
   */
  #readAfter(version: number): Promise<CatchUpPage> {
    let read = this.#readsAfter.get(version);
    if (read === undefined) {
      read = this.#catchUpReads.run(async () => {
        const page = await this.#store.readChanges(version, CHANGES_PER_READ);
        return { page, events: page.changes.map(changeEvent) };
      });
      this.#readsAfter.set(version, read);
      const forget = (): void => void this.#readsAfter.delete(version);
      read.then(forget, forget);
    }
    return read;
  }

  /** Resolves once the client has read enough of what was written; disconnects one that stalls. */
  async #readable(stream: Stream): Promise<void> {
    if (unsent(stream) < UNSENT_LIMIT_BYTES) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('stalled')), STALLED_MS);
      const check = (): void => {
        if (stream.closed || unsent(stream) < UNSENT_LIMIT_BYTES / 2) {
          clearTimeout(timer);
          stream.socket.off('drain', check);
          stream.body.off('drain', check);
          resolve();
        }
      };
      stream.socket.on('drain', check);
      stream.body.on('drain', check);
    });
  }

  #startPolling(): void {
    this.#poll ??= setInterval(() => void this.#pollChanges(), POLL_MS);
  }

  #stopPolling(): void {
    clearInterval(this.#poll);
    this.#poll = undefined;
  }

  /** Reads the changes after the live head when the catalogue changed, and sends each to every live stream. */
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
        for (const change of page.changes) {
          const event = changeEvent(change);
          for (const stream of this.#live) {
            if (change.version <= stream.position) continue;
            stream.position = change.version;
            if (unsent(stream) > UNSENT_LIMIT_BYTES) this.#disconnect(stream);
            else write(stream, event);
          }
        }
        this.#head = Math.max(this.#head, page.changes.at(-1)?.version ?? this.#head);
        if (!page.more) return;
      }
    } catch {
      // The database is away: the next poll tries again, and the generation is read again.
      this.#generation = undefined;
    } finally {
      this.#reading = false;
    }
  }

  #beat(): void {
    for (const stream of this.#all) write(stream, ': keep-alive\n\n');
  }

  /** Drops a client that cannot keep up or whose stream failed; it resumes from its Last-Event-ID. */
  #disconnect(stream: Stream): void {
    stream.socket.destroy();
    stream.body.destroy();
  }
}

/**
 * Tells a stream the catalogue's identity with its first read (`event: catalogue`); ends it when a
 * later read finds another (a restore cut the history): the client, reconnecting, is told the new one
 * and starts its copy again.
 */
function sameCatalogue(stream: Stream, page: ChangePage): boolean {
  if (stream.catalogue === undefined) {
    stream.catalogue = page.catalogue;
    write(stream, `event: catalogue\ndata: ${JSON.stringify({ catalogue_id: page.catalogue })}\n\n`);
  }
  if (stream.catalogue === page.catalogue) return true;
  stream.body.end();
  return false;
}

function changeEvent(change: Change): string {
  return `id: ${change.version}\nevent: change\ndata: ${JSON.stringify(changeWire(change))}\n\n`;
}

function write(stream: Stream, text: string): void {
  if (!stream.closed && !stream.body.writableEnded) stream.body.write(text);
}

/** Bytes written for the client that it has not read yet: in the answer's stream and the socket. */
function unsent(stream: Stream): number {
  return stream.body.writableLength + stream.socket.writableLength;
}
