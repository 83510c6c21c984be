import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueStore } from '../storage/store.js';
import { COMPRESS_MIN_BYTES, chooseCoding, compressBody, compressStream, type ContentCoding } from './compression.js';
import { RevisionCache } from './revision-cache.js';

/** A JSON body already serialized, with the strong validator of its exact bytes. */
interface TaggedBody {
  readonly body: string | Buffer;
  readonly etag: string;
  /** Its compressed forms, each made on first request and then kept with the body. */
  readonly encoded: Partial<Record<ContentCoding, Promise<EncodedBody>>>;
}

/** A body in a content coding, with a strong validator of its own: a different representation. */
interface EncodedBody {
  readonly bytes: Buffer;
  readonly etag: string;
}

/**
 * What a read gives to be answered: JSON text or its UTF-8 bytes (tagged, kept, conditional) or, too
 * large to keep, a stream of it.
 */
export type ReadAnswer = string | Buffer | { readonly stream: Readable };

/**
 * The one way a read is answered: from memory while the catalogue has not changed, else read and
 * kept. Every JSON text gets a strong ETag and a 304 for a matching If-None-Match, and its
 * compressed forms are made once, on first request, and kept beside it. Valid for the catalogue's
 * current cache generation only: the generation is read before the data, so that a write in between
 * leaves the kept answer under a generation no later request asks for.
 *
 * @example const details = new CachedAnswers(store, 16 * 1024 * 1024); return details.answer(request, reply, key, read);
 */
export class CachedAnswers {
  readonly #store: CatalogueStore;
  readonly #cache: RevisionCache<TaggedBody>;

  /** Kept answers fit `maxBytes` (with room for their compressed forms) and number at most `maxEntries`. */
  constructor(store: CatalogueStore, maxBytes: number, maxEntries = Number.POSITIVE_INFINITY) {
    this.#store = store;
    this.#cache = new RevisionCache<TaggedBody>(maxBytes, taggedSize, maxEntries);
  }

  /**
   * Answers from memory when `key` names a kept answer of the current generation; else calls `read`
   * and sends what it gives, keeping JSON text under `key` (`undefined`: never kept, as when the bytes
   * depend on more than the key). An error `read` throws (a 404, a 400) is the answer, and nothing is kept.
   */
  async answer(request: FastifyRequest, reply: FastifyReply, key: string | undefined, read: () => Promise<ReadAnswer>): Promise<FastifyReply> {
    const generation = await this.#store.cacheGeneration();
    const kept = key === undefined ? undefined : this.#cache.get(generation, key);
    if (kept !== undefined) return sendTagged(request, reply, kept);
    const answer = await read();
    if (typeof answer !== 'string' && !Buffer.isBuffer(answer)) return sendStream(request, reply, answer.stream);
    const tagged = tagBody(answer);
    if (key !== undefined) this.#cache.set(generation, key, tagged);
    return sendTagged(request, reply, tagged);
  }
}

/**
 * Answers at least this long are kept as UTF-8, encoded once: text would be encoded again on every
 * write. A page of 100 products (about 9 KB) kept as bytes is answered 25 % faster than as text (A/B run
 * with wrk). Shorter ones, a product's, stay text, which Node joins to the headers in one piece: kept as
 * bytes they measured no faster.
 */
const KEPT_AS_BYTES_FROM = 1024;

/** Tags a serialized body with a strong ETag: a digest of its bytes, so equal bytes give equal tags. */
function tagBody(text: string | Buffer): TaggedBody {
  const body = typeof text === 'string' && text.length >= KEPT_AS_BYTES_FROM ? Buffer.from(text) : text;
  return { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"`, encoded: {} };
}

/**
 * Bytes a kept body holds, about: with room for its compressed forms, which JSON text shrinks to well
 * under a quarter of its length each.
 */
function taggedSize(tagged: TaggedBody): number {
  return Math.ceil(tagged.body.length * 1.5) + tagged.etag.length;
}

/**
 * Sends a tagged JSON body, compressed when the client accepts it and the body is long enough, or 304
 * with no body when the request's If-None-Match already names the ETag of what it would get
 * (RFC 9110 §13.1.2: weak comparison, `*` matches any current representation). Waits only when a
 * compressed form is still being made: a short body (one product) is sent at once.
 */
function sendTagged(request: FastifyRequest, reply: FastifyReply, tagged: TaggedBody): FastifyReply | Promise<FastifyReply> {
  if (tagged.body.length < COMPRESS_MIN_BYTES) return sendBytes(request, reply, tagged.etag, tagged.body);
  addVary(reply, 'Accept-Encoding');
  const coding = chooseCoding(request.headers['accept-encoding']);
  if (coding === undefined) return sendBytes(request, reply, tagged.etag, tagged.body);
  return (tagged.encoded[coding] ??= encode(tagged, coding)).then((encoded) => {
    reply.header('Content-Encoding', coding);
    return sendBytes(request, reply, encoded.etag, encoded.bytes);
  });
}

function sendBytes(request: FastifyRequest, reply: FastifyReply, etag: string, payload: string | Buffer): FastifyReply {
  reply.header('ETag', etag);
  if (noneMatch(request.headers['if-none-match'], etag)) {
    // HEAD: the body only sizes Content-Length (the 200's own length, as RFC 9110 §8.6 allows) and is
    // dropped; GET: a 304 has no body and no length.
    if (request.method !== 'HEAD') reply.removeHeader('Content-Encoding');
    return reply.code(304).send(request.method === 'HEAD' ? payload : undefined);
  }
  return reply.type('application/json; charset=utf-8').send(payload);
}

/** Sends JSON text too large to keep as it is read, compressed on the way when the client accepts it; it has no ETag. */
function sendStream(request: FastifyRequest, reply: FastifyReply, stream: Readable): FastifyReply {
  reply.type('application/json; charset=utf-8');
  addVary(reply, 'Accept-Encoding');
  const coding = chooseCoding(request.headers['accept-encoding']);
  if (coding === undefined) return reply.send(stream);
  reply.header('Content-Encoding', coding);
  return reply.send(compressStream(stream, coding));
}

async function encode(tagged: TaggedBody, coding: ContentCoding): Promise<EncodedBody> {
  // The identity tag with the coding's name inside the quotes: still strong, distinct per coding.
  return { bytes: await compressBody(tagged.body, coding), etag: `${tagged.etag.slice(0, -1)}-${coding}"` };
}

/** Adds a field name to `Vary`, keeping what is there (CORS may have put `Origin`). */
export function addVary(reply: FastifyReply, field: string): void {
  const current = reply.getHeader('vary');
  reply.header('Vary', current === undefined || current === '' ? field : `${String(current)}, ${field}`);
}

function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return (tag.startsWith('W/') ? tag.slice(2) : tag) === etag;
  });
}

/**
 * A 200 JSON body as the route's compiled response schema writes it (the same bytes Fastify would
 * send), so that it can be tagged and kept as text.
 */
export function serializeOk(reply: FastifyReply, payload: object): string {
  const compiled = reply.getSerializationFunction('200', 'application/json') ?? reply.getSerializationFunction('200');
  return typeof compiled === 'function' ? compiled(payload as Record<string, unknown>) : JSON.stringify(payload);
}
