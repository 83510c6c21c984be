import { Client } from 'pg';
import type { ChangeConnection, ChangeSignal } from '../dialect.js';

/** Waits between attempts to listen again after the connection was lost: doubling, up to the last. */
const RETRY_MS = { first: 50, most: 2_000 } as const;

/** Opening the listening connection gives up after this; the next attempt follows. */
const CONNECT_TIMEOUT_MS = 2_000;

/**
 * How often the listening connection is asked to answer, and how long it has to: a connection the
 * network dropped without a word (a NAT's idle timeout, a partition) delivers no notice and no error,
 * and the caches would be served unchanged for as long as it stayed so. Not answering counts as lost.
 */
const CHECK_EVERY_MS = 5_000;
const CHECK_WITHIN_MS = 5_000;

/**
 * The channel the catalogue's triggers notify on (migration 0004): one per schema, since channel names
 * are database-wide and several catalogues may share one database. md5 keeps it under 63 bytes.
 */
const CHANNEL_QUERY = "SELECT 'catalogue_' || md5(current_schema()) AS channel";

/** The notice of a statement that only inserted products. */
const ONLY_ADDED = 'INSERT';

/**
 * Hears the database's own notices of committed product changes on a connection of its own (`LISTEN`),
 * so that caches stay valid without a round trip per request. While that connection is down (killed,
 * database restarting), `current()` says so and callers check the revision instead; the connection is
 * opened again in the background, and its return counts as a change, flushing what was cached before.
 */
export class PostgresChangeListener implements ChangeSignal {
  /** A notice arrives a little after the commit it tells of. */
  readonly late = true;
  readonly #url: string;
  #client: Client | undefined;
  #changes = 0;
  #existingChanges = 0;
  #listening = false;
  #lostWhileListening = 0;
  #started = false;
  #closed = false;
  #retryMs: number = RETRY_MS.first;
  #timer: NodeJS.Timeout | undefined;
  #check: NodeJS.Timeout | undefined;

  constructor(url: string) {
    this.#url = url;
  }

  /** How many changes were heard, while listening; `undefined` while not (the caller must ask the database). */
  current(): number | undefined {
    if (!this.#started) {
      // Started on first use, so a command that never caches opens no extra connection.
      this.#started = true;
      void this.#listen();
    }
    return this.#listening ? this.#changes : undefined;
  }

  existingChanges(): number {
    return this.#existingChanges;
  }

  connection(): ChangeConnection {
    return { listening: this.#listening, lost: this.#lostWhileListening };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listening = false;
    clearTimeout(this.#timer);
    clearInterval(this.#check);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #listen(): Promise<void> {
    if (this.#closed) return;
    const client = new Client({ connectionString: this.#url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
    this.#client = client;
    // A lost connection emits 'error' (and then 'end'); without a listener the error would end the process.
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    client.on('notification', ({ payload }) => {
      this.#changes += 1;
      // Named by migration 0014; anything else (an older trigger's empty notice) may have changed any product.
      if (payload !== ONLY_ADDED) this.#existingChanges += 1;
    });
    try {
      // Opening covers the connect alone: a connection that goes silent after it would hold the
      // queries below (and no retry would follow) until the kernel gave up on it, some 15 minutes.
      const listening = this.#startListening(client);
      this.#unlessAnsweredWithin(client, listening, CONNECT_TIMEOUT_MS + CHECK_WITHIN_MS);
      await listening;
    } catch {
      this.#lost(client);
      return;
    }
    if (this.#client !== client || this.#closed) return;
    // Whatever changed while nobody listened is unknown: the return counts as a change of any product.
    this.#changes += 1;
    this.#existingChanges += 1;
    this.#listening = true;
    this.#retryMs = RETRY_MS.first;
    this.#check = setInterval(() => this.#checkAnswers(client), CHECK_EVERY_MS);
    this.#check.unref();
  }

  async #startListening(client: Client): Promise<void> {
    await client.connect();
    const { rows } = await client.query<{ channel: string }>(CHANNEL_QUERY);
    const channel = rows[0]!.channel;
    // Named after the channel, so that an operator (or a test) can tell this instance's listener apart.
    await client.query(`SET application_name = 'catalogue listener ${channel}'`);
    await client.query(`LISTEN "${channel}"`);
  }

  /** Asks the listening connection for a trivial answer; none in time, and it counts as lost. */
  #checkAnswers(client: Client): void {
    if (this.#client !== client) return;
    // A failed query ends in the connection's 'error', or is asked again at the next check.
    this.#unlessAnsweredWithin(client, client.query('SELECT 1'), CHECK_WITHIN_MS);
  }

  /**
   * Counts `client` lost unless `asked` has settled within `ms`. An answer already in the socket when
   * the time is up is read first: a turn of the event loop that ran longer than `ms` on other work
   * is not the connection's silence.
   */
  #unlessAnsweredWithin(client: Client, asked: Promise<unknown>, ms: number): void {
    let answered = false;
    const silent = setTimeout(() => {
      setImmediate(() => {
        if (!answered) this.#lost(client);
      });
    }, ms);
    silent.unref();
    const settled = (): void => {
      answered = true;
      clearTimeout(silent);
    };
    asked.then(settled, settled);
  }

  #lost(client: Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    if (this.#listening) this.#lostWhileListening += 1;
    this.#listening = false;
    clearInterval(this.#check);
    client.end().catch(() => undefined);
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#listen(), this.#retryMs);
    this.#timer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MS.most);
  }
}
