import createClient from 'openapi-fetch';
import type { components, paths } from './catalogue-api.js';
import { CatalogueError, type Product } from './till.js';

export type Change = components['schemas']['Change'];

/** Changes asked for per page while the copy is made. */
const PAGE_LIMIT = 1000;

/** The pause before following the stream again after it broke (the service asks for about as much). */
const RECONNECT_MS = 2_000;

/**
 * The till's own copy of the catalogue, kept in step through the change feed: made once from the
 * pages of changes (a whole copy from version 0), then followed live over server-sent events, resumed
 * from the last version seen whenever the connection drops. A scanned barcode is then looked up on
 * the device, without a round trip, and keeps being found while the network is down.
 *
 * Versions count within one history of the catalogue: a restored backup starts another, and the
 * feed says so with another `catalogue_id` (or a 409 for a version ahead of it). The copy is then of
 * a catalogue that is no more: it is dropped and made again from version 0.
 */
export class OfflineCopy {
  readonly #baseUrl: string;
  readonly #client;
  readonly #byPk = new Map<number, Product>();
  readonly #byBarcode = new Map<string, Product>();
  #version = 0;
  /** The identity of the catalogue the copy is of; `undefined` before the first answer. */
  #catalogue: string | undefined;
  #following: AbortController | undefined;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
    this.#client = createClient<paths>({ baseUrl });
  }

  /** The catalogue's version this copy is at: every change up to it is in. */
  get version(): number {
    return this.#version;
  }

  /** The identity of the catalogue the copy is of (`catalogue_id` in the feed). */
  get catalogue(): string | undefined {
    return this.#catalogue;
  }

  /** The products of the copy, in pk order. */
  products(): Product[] {
    return [...this.#byPk.values()].sort((a, b) => a.pk - b.pk);
  }

  /** The product a scanned barcode names, from the copy: no request. A 12-digit UPC-A is read as its EAN-13. */
  scan(barcode: string): Product | undefined {
    return this.#byBarcode.get(/^[0-9]{12}$/.test(barcode) ? `0${barcode}` : barcode);
  }

  /**
   * Brings the copy up to the catalogue's version by reading the pages of changes since its own
   * (a whole copy the first time), following `next` until there is none.
   *
   * @throws CatalogueError when the service refuses, e.g. 409: the copy is of another catalogue.
   */
  async sync(limit = PAGE_LIMIT): Promise<void> {
    let since = this.#version;
    for (;;) {
      const { data, error, response } = await this.#client.GET('/api/v2/shop/changes', { params: { query: { since: String(since), limit: String(limit) } } });
      if (response.status === 409 && since > 0) {
        // Ahead of the catalogue: its history was cut (a restored backup) since this copy was made.
        this.#startAgain(undefined);
        since = 0;
        continue;
      }
      // The route also answers text/event-stream; asked for JSON, it answers JSON.
      if (data === undefined || typeof data === 'string') throw new CatalogueError(response.status, error);
      if (data.catalogue_id !== this.#catalogue) {
        const fresh = since === 0;
        this.#startAgain(data.catalogue_id);
        if (!fresh) {
          since = 0;
          continue;
        }
      }
      for (const change of data.changes) this.#apply(change);
      if (data.next === null) {
        this.#version = Math.max(this.#version, data.version);
        return;
      }
      since = data.changes.at(-1)!.version;
      this.#version = since;
    }
  }

  /**
   * Follows the live stream of changes, from the copy's version on, until `stop()`; after a dropped
   * connection it follows again from the last version it had (the service sends what it missed).
   * `onChange` hears of each change applied.
   */
  follow(onChange: (change: Change) => void = () => undefined): { stop(): void; caughtUp: Promise<void> } {
    const control = new AbortController();
    this.#following = control;
    let caughtUp: () => void = () => undefined;
    const whenCaughtUp = new Promise<void>((resolve) => (caughtUp = resolve));
    void (async () => {
      while (!control.signal.aborted) {
        let again: boolean;
        try {
          again = await this.#readStream(control.signal, onChange, caughtUp);
        } catch {
          // A dropped connection, a service away: follow again after a pause.
          again = false;
        }
        if (!again && !control.signal.aborted) await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    })();
    return { stop: () => control.abort(), caughtUp: whenCaughtUp };
  }

  /** Stops following the stream. */
  stop(): void {
    this.#following?.abort();
  }

  /**
   * Reads the stream until it ends. Resolves true when the copy was dropped to be made again (another
   * catalogue identity, or a 409): to follow again at once, from version 0.
   */
  async #readStream(signal: AbortSignal, onChange: (change: Change) => void, caughtUp: () => void): Promise<boolean> {
    // EventSource as a browser has it; read by hand here, so that the example runs on every Node.
    const response = await fetch(`${this.#baseUrl}/api/v2/shop/changes`, {
      headers: { Accept: 'text/event-stream', 'Last-Event-ID': String(this.#version) },
      signal,
    });
    if (response.status === 409 && this.#version > 0) {
      await response.body?.cancel();
      this.#startAgain(undefined);
      return true;
    }
    if (response.status !== 200 || response.body === null) throw new CatalogueError(response.status, undefined);
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    let buffered = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return false;
      buffered += decoder.decode(value, { stream: true });
      const events = buffered.split('\n\n');
      buffered = events.pop()!;
      for (const event of events) {
        const fields = new Map(event.split('\n').filter((line) => !line.startsWith(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
        if (fields.get('event') === 'catalogue') {
          const { catalogue_id: catalogue } = JSON.parse(fields.get('data')!) as { catalogue_id: string };
          if (catalogue === this.#catalogue) continue;
          // Another history: what follows it comes after a version of this copy's own history.
          const fresh = this.#version === 0;
          this.#startAgain(catalogue);
          if (fresh) continue;
          await reader.cancel();
          return true;
        }
        if (fields.get('event') === 'change') {
          const change = JSON.parse(fields.get('data')!) as Change;
          this.#apply(change);
          this.#version = change.version;
          onChange(change);
        } else if (fields.get('event') === 'caught-up') {
          this.#version = Math.max(this.#version, Number(fields.get('id')));
          caughtUp();
        }
      }
    }
  }

  /** Drops the copy, to be made again from version 0 of the catalogue `catalogue` (`undefined`: not known yet). */
  #startAgain(catalogue: string | undefined): void {
    this.#byPk.clear();
    this.#byBarcode.clear();
    this.#version = 0;
    this.#catalogue = catalogue;
  }

  #apply(change: Change): void {
    const before = this.#byPk.get(change.pk);
    if (before !== undefined) this.#byBarcode.delete(before.barcode);
    if (change.product === null) {
      this.#byPk.delete(change.pk);
      return;
    }
    this.#byPk.set(change.pk, change.product);
    this.#byBarcode.set(change.product.barcode, change.product);
  }
}
