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
 */
export class OfflineCopy {
  readonly #baseUrl: string;
  readonly #client;
  readonly #byPk = new Map<number, Product>();
  readonly #byBarcode = new Map<string, Product>();
  #version = 0;
  #following: AbortController | undefined;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
    this.#client = createClient<paths>({ baseUrl });
  }

  /** The catalogue's version this copy is at: every change up to it is in. */
  get version(): number {
    return this.#version;
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
      // The route also answers text/event-stream; asked for JSON, it answers JSON.
      if (data === undefined || typeof data === 'string') throw new CatalogueError(response.status, error);
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
        try {
          await this.#readStream(control.signal, onChange, caughtUp);
        } catch {
          // A dropped connection, a service away: follow again after a pause.
        }
        if (!control.signal.aborted) await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    })();
    return { stop: () => control.abort(), caughtUp: whenCaughtUp };
  }

  /** Stops following the stream. */
  stop(): void {
    this.#following?.abort();
  }

  async #readStream(signal: AbortSignal, onChange: (change: Change) => void, caughtUp: () => void): Promise<void> {
    // EventSource as a browser has it; read by hand here, so that the example runs on every Node.
    const response = await fetch(`${this.#baseUrl}/api/v2/shop/changes`, {
      headers: { Accept: 'text/event-stream', 'Last-Event-ID': String(this.#version) },
      signal,
    });
    if (response.status !== 200 || response.body === null) throw new CatalogueError(response.status, undefined);
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    let buffered = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      const events = buffered.split('\n\n');
      buffered = events.pop()!;
      for (const event of events) {
        const fields = new Map(event.split('\n').filter((line) => !line.startsWith(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
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
