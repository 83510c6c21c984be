import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { BENCH_HOST } from './expected.js';

export interface Sent {
  readonly method: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

export interface Received {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body with its content coding undone. */
  readonly body: Buffer;
  /** Milliseconds from sending to the first byte of the body (or of the head, for an empty body). */
  readonly firstByteMs: number;
}

/** One request on a connection of its own, with the bench's Host; the answer's body is decoded. */
export function send(port: number, sent: Sent): Promise<Received> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const body = sent.body === undefined ? undefined : Buffer.from(sent.body);
    const headers: Record<string, string | number> = { Host: BENCH_HOST, ...sent.headers };
    if (body !== undefined) headers['Content-Length'] = body.length;
    const req = request({ host: '127.0.0.1', port, method: sent.method, path: sent.path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let firstByteMs = -1;
      res.on('data', (chunk: Buffer) => {
        if (firstByteMs < 0) firstByteMs = performance.now() - started;
        chunks.push(chunk);
      });
      res.on('end', () => {
        try {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: decode(Buffer.concat(chunks), res.headers['content-encoding']),
            firstByteMs: firstByteMs < 0 ? performance.now() - started : firstByteMs,
          });
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function decode(raw: Buffer, coding: string | undefined): Buffer {
  switch (coding) {
    case undefined:
    case 'identity':
      return raw;
    case 'gzip':
      return gunzipSync(raw);
    case 'br':
      return brotliDecompressSync(raw);
    case 'deflate':
      return inflateSync(raw);
    default:
      throw new Error(`unknown content coding ${coding}`);
  }
}
