import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body as text ('' when there was none). */
  readonly text: string;
  /** The body's bytes as received (still compressed when Content-Encoding says so). */
  readonly bytes: Buffer;
  /** The body parsed as JSON, or `undefined` when it is empty. */
  readonly json: unknown;
}

export interface RawRequest {
  readonly method?: string;
  readonly headers?: Record<string, string | number>;
  /** Sent exactly as given: a string (UTF-8) or raw bytes. */
  readonly body?: string | Buffer;
  /** The agent whose connection to use (a keep-alive one, to stay with one worker); a new connection unless given. */
  readonly agent?: Agent;
  /** The address to send from (another loopback address is another client to the rate limit). */
  readonly localAddress?: string;
}

/**
 * Sends one request over a real socket with `node:http`, which (unlike fetch) lets a test send any
 * method, any bytes and no Content-Type at all.
 */
export function send(url: string, options: RawRequest = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...options.headers };
    // node:http sends a GET or DELETE body with neither length nor chunking unless told.
    if (options.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) {
      headers['Content-Length'] = Buffer.byteLength(options.body);
    }
    const req = httpRequest(url, { method: options.method ?? 'GET', headers, agent: options.agent ?? false, ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        let json: unknown;
        const encoded = res.headers['content-encoding'] !== undefined;
        if (text !== '' && !encoded && /json/.test(res.headers['content-type'] ?? '')) json = JSON.parse(text);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** POSTs a JSON body (already a string, so tests control every byte). */
export function postJson(url: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<RawResponse> {
  return send(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
}
