import { request as httpRequest, type IncomingHttpHeaders, type ClientRequest } from 'node:http';

/** One server-sent event as a client reads it; a comment line is an event with `comment` alone. */
export interface ServerEvent {
  readonly id?: string;
  readonly event?: string;
  readonly data?: string;
  readonly retry?: string;
  readonly comment?: string;
}

export interface EventStreamClient {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Every event read so far, in order. */
  readonly events: ServerEvent[];
  /** The body when the answer is no stream (an error's problem document). */
  readonly text: () => string;
  /** Resolves with the first event (from the start) that `match` accepts; rejects after `withinMs` or when the stream ends first. */
  waitFor(match: (event: ServerEvent) => boolean, withinMs?: number): Promise<ServerEvent>;
  /** Resolves when the server ends the stream or the connection closes. */
  readonly ended: Promise<void>;
  /** The `id` of the last whole event read: what EventSource sends as Last-Event-ID when it reconnects. */
  readonly lastEventId: () => string | undefined;
  /** Stops reading: the socket's buffers fill, and the service is left holding what it writes. */
  pause(): void;
  /** Starts reading a stream opened `paused`, or reading again after `pause()`. */
  resume(): void;
  close(): void;
}

export interface EventStreamOptions {
  /**
   * Reads nothing of the stream until `resume()`: a client that stops reading, whose socket buffers
   * fill and leave the service holding what it writes.
   */
  readonly paused?: boolean;
}

/**
 * Opens `url` as EventSource does (`Accept: text/event-stream`, plus any `headers`) and parses the
 * events as they come (the format of the HTML standard's server-sent events).
 */
export function openEventStream(url: string, headers: Record<string, string | string[]> = {}, { paused = false }: EventStreamOptions = {}): Promise<EventStreamClient> {
  return new Promise((resolve, reject) => {
    let req: ClientRequest;
    const events: ServerEvent[] = [];
    const waiters: Array<{ match: (event: ServerEvent) => boolean; resolve: (event: ServerEvent) => void }> = [];
    let text = '';
    let pending = '';
    let current: Record<string, string> = {};
    let lastEventId: string | undefined;
    let endedResolve: () => void = () => undefined;
    const ended = new Promise<void>((done) => (endedResolve = done));
    const take = (line: string): void => {
      if (line === '') {
        if (Object.keys(current).length > 0) {
          const event = current as ServerEvent;
          if (event.id !== undefined) lastEventId = event.id;
          events.push(event);
          for (const waiter of waiters.filter((w) => w.match(event))) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(event);
          }
        }
        current = {};
        return;
      }
      if (line.startsWith(':')) {
        events.push({ comment: line.slice(1).trim() });
        return;
      }
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      current[field] = field === 'data' && current['data'] !== undefined ? `${current['data']}\n${value}` : value;
    };
    req = httpRequest(url, { headers: { Accept: 'text/event-stream', ...headers }, agent: false }, (res) => {
      res.setEncoding('utf8');
      let reading = false;
      const read = (): void => {
        if (reading) return;
        reading = true;
        res.on('data', (chunk: string) => {
          text += chunk;
          pending += chunk;
          const lines = pending.split(/\r\n|\r|\n/);
          pending = lines.pop()!;
          for (const line of lines) take(line);
        });
      };
      if (paused) res.pause();
      else read();
      res.on('close', endedResolve);
      res.on('error', endedResolve);
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        text: () => text,
        ended,
        waitFor: (match, withinMs = 5_000) => {
          const seen = events.find(match);
          if (seen !== undefined) return Promise.resolve(seen);
          return new Promise((found, fail) => {
            const timer = setTimeout(() => fail(new Error(`no such event within ${withinMs} ms; got ${JSON.stringify(events)}`)), withinMs);
            waiters.push({ match, resolve: (event) => (clearTimeout(timer), found(event)) });
            void ended.then(() => {
              clearTimeout(timer);
              fail(new Error(`the stream ended before such an event; got ${JSON.stringify(events)}`));
            });
          });
        },
        lastEventId: () => lastEventId,
        pause: () => res.pause(),
        resume: () => {
          read();
          res.resume();
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', (error) => {
      endedResolve();
      reject(error);
    });
    req.end();
  });
}

/** The change objects of a stream's `change` events so far. */
export function changesOf(events: readonly ServerEvent[]): Array<{ version: number; pk: number; product: unknown }> {
  return events.filter((event) => event.event === 'change').map((event) => JSON.parse(event.data!) as { version: number; pk: number; product: unknown });
}
