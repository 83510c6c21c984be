import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CacheScope, CatalogueStore } from '../../storage/store.js';
import { COMPRESS_MIN_BYTES, chooseCoding, compressBody, compressStream, type ContentCoding } from './compression.js';
import { RevisionCache } from './revision-cache.js';
import { whenConnectionGone } from '../connection/connection-gone.js';

/** The type of every kept answer's body. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** A JSON body already serialized, with the strong validator of its exact bytes. */
interface TaggedBody {
  /** The body as it is, in the form every request that takes no content coding gets. */
  readonly identity: KeptForm;
  /** Its compressed forms, each made on first request and then kept with the body. */
  readonly encoded: Partial<Record<ContentCoding, Promise<KeptForm>>>;
  /** The compressed forms already made: what can be sent without waiting. */
  readonly ready: Partial<Record<ContentCoding, KeptForm>>;
}

/**
 * One representation of a kept answer: its bytes, their strong validator and content coding, and
 * whether the choice of it depended on `Accept-Encoding` (then the answer says `Vary: Accept-Encoding`).
 * A coded form is a representation of its own, with an ETag of its own.
 */
export interface KeptForm {
  readonly bytes: string | Buffer;
  /** Their length in bytes: the `Content-Length`. */
  readonly length: number;
  readonly etag: string;
  readonly coding: ContentCoding | undefined;
  readonly variesByEncoding: boolean;
}

/**
 * What a read gives to be answered: JSON text or its UTF-8 bytes (tagged, kept, conditional) or, too
 * large to keep, a stream of it.
 */
export type ReadAnswer = string | Buffer | { readonly stream: Readable };

/**
 * The one way a read is answered: from memory while what it was read from has not changed (its
 * `CacheScope`: the catalogue, or only the products that exist), else read and kept. Every JSON text gets a strong ETag and a 304 for a matching If-None-Match, and its
 * compressed forms are made once, on first request, and kept beside it. Valid for the catalogue's
 * current cache generation of its scope only: the generation is read before the data, so that a write in between
 * leaves the kept answer under a generation no later request asks for.
 *
 * @example const details = new CachedAnswers(store, 16 * 1024 * 1024, 100_000, 'existing products'); return details.answer(request, reply, key, read);
 */
export class CachedAnswers {
  readonly #store: CatalogueStore;
  readonly #cache: RevisionCache<TaggedBody>;
  readonly #scope: CacheScope;

  /**
   * Kept answers fit `maxBytes` (with room for their compressed forms) and number at most `maxEntries`;
   * they are kept while what `scope` names is unchanged (`existing products`: products added do not
   * end them).
   */
  constructor(store: CatalogueStore, maxBytes: number, maxEntries = Number.POSITIVE_INFINITY, scope: CacheScope = 'catalogue') {
    this.#store = store;
    this.#cache = new RevisionCache<TaggedBody>(maxBytes, taggedSize, maxEntries);
    this.#scope = scope;
  }

  /**
   * Answers from memory when `key` names a kept answer of the current generation; else calls `read`
   * and sends what it gives, keeping JSON text under `key` (`undefined`: never kept, as when the bytes
   * depend on more than the key). An error `read` throws (a 404, a 400) is the answer, and nothing is kept.
   */
  async answer(request: FastifyRequest, reply: FastifyReply, key: string | undefined, read: () => Promise<ReadAnswer>): Promise<FastifyReply> {
    const generation = await this.#store.cacheGeneration(this.#scope);
    const kept = key === undefined ? undefined : this.#cache.get(generation, key);
    if (kept !== undefined) return sendKept(request, reply, kept);
    const answer = await read();
    if (typeof answer !== 'string' && !Buffer.isBuffer(answer)) return sendStream(request, reply, answer.stream);
    const tagged = tagBody(answer);
    if (key !== undefined) this.#cache.set(generation, key, tagged);
    return sendKept(request, reply, tagged);
  }

  /**
   * The form of the answer kept under `key` for the catalogue as it is now that a request with this
   * `Accept-Encoding` gets, when it can be sent at once: `undefined` when nothing is kept, when the
   * catalogue's generation is not known without asking the database, or when the coded form is still
   * to be made. Then `answer` is the way.
   */
  formNow(key: string, acceptEncoding: string | undefined): KeptForm | undefined {
    // Nothing is asked of the database here: `answer` asks it once, where it must.
    const generation = this.#store.cacheGenerationNow(this.#scope);
    if (generation === undefined) return undefined;
    const kept = this.#cache.get(generation, key);
    if (kept === undefined) return undefined;
    const form = formFor(kept, acceptEncoding);
    return form instanceof Promise ? undefined : form;
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
  const bytes = typeof text === 'string' && text.length >= KEPT_AS_BYTES_FROM ? Buffer.from(text) : text;
  const length = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length;
  const etag = `"${createHash('sha1').update(bytes).digest('base64url')}"`;
  return { identity: { bytes, length, etag, coding: undefined, variesByEncoding: length >= COMPRESS_MIN_BYTES }, encoded: {}, ready: {} };
}

/**
 * Bytes a kept body holds, about: with room for its compressed forms, which JSON text shrinks to well
 * under a quarter of its length each.
 */
function taggedSize(tagged: TaggedBody): number {
  return Math.ceil(tagged.identity.bytes.length * 1.5) + tagged.identity.etag.length;
}

/**
 * The form a request gets (RFC 9110 §12.5.3): compressed when the client accepts it and the body is
 * long enough, else as it is. A promise only while the compressed form is still being made: a short
 * body (one product) is always there at once.
 */
function formFor(tagged: TaggedBody, acceptEncoding: string | undefined): KeptForm | Promise<KeptForm> {
  if (!tagged.identity.variesByEncoding) return tagged.identity;
  const coding = chooseCoding(acceptEncoding);
  if (coding === undefined) return tagged.identity;
  return tagged.ready[coding] ?? (tagged.encoded[coding] ??= encode(tagged, coding));
}

/**
 * Sends a kept answer in the form the request gets, or 304 with no body when the request's
 * If-None-Match already names that form's ETag.
 */
function sendKept(request: FastifyRequest, reply: FastifyReply, tagged: TaggedBody): FastifyReply | Promise<FastifyReply> {
  const form = formFor(tagged, request.headers['accept-encoding']);
  return form instanceof Promise ? form.then((made) => sendForm(request, reply, made)) : sendForm(request, reply, form);
}

function sendForm(request: FastifyRequest, reply: FastifyReply, form: KeptForm): FastifyReply {
  if (form.variesByEncoding) addVary(reply, 'Accept-Encoding');
  if (form.coding !== undefined) reply.header('Content-Encoding', form.coding);
  return sendBytes(request, reply, form.etag, form.bytes);
}

function sendBytes(request: FastifyRequest, reply: FastifyReply, etag: string, payload: string | Buffer): FastifyReply {
  reply.header('ETag', etag);
  if (notModified(request.headers['if-none-match'], etag)) {
    // GET: a 304 has no body and no length. HEAD: the body only sizes Content-Length, which is then the
    // 200's own (RFC 9110 §8.6 allows that one value; without a body Fastify's HEAD handling would write
    // 0), and is dropped; its type is the 200's too, so that a cache taking the 304's fields into what it
    // keeps (RFC 9111 §4.3.4) keeps the right one, not the text/plain a bare body would get.
    if (request.method !== 'HEAD') {
      reply.removeHeader('Content-Encoding');
      return reply.code(304).send();
    }
    return reply.code(304).type(JSON_TYPE).send(payload);
  }
  return reply.type(JSON_TYPE).send(payload);
}

/** Sends JSON text too large to keep as it is read, compressed on the way when the client accepts it; it has no ETag. */
function sendStream(request: FastifyRequest, reply: FastifyReply, stream: Readable): FastifyReply {
  addVary(reply, 'Accept-Encoding');
  // `*` matches any current representation (RFC 9110 §13.1.2), one without an ETag too.
  if (request.headers['if-none-match']?.trim() === '*') {
    stream.destroy();
    return reply.code(304).send();
  }
  reply.type(JSON_TYPE);
  // An answer queued behind another on a connection that closed (pipelined lists, then gone) would read
  // on into a buffer nobody takes, counted open for good: twenty connections of a hundred lists each left
  // 5,080 lists open and the two workers at 1.3 and 2.6 GB.
  whenConnectionGone(request.raw, () => {
    if (!reply.raw.writableFinished) stream.destroy();
  });
  const coding = chooseCoding(request.headers['accept-encoding']);
  if (coding === undefined) return reply.send(stream);
  reply.header('Content-Encoding', coding);
  return reply.send(compressStream(stream, coding, () => request.raw.socket?.readableEnded === true));
}

async function encode(tagged: TaggedBody, coding: ContentCoding): Promise<KeptForm> {
  const { identity } = tagged;
  const bytes = await compressBody(identity.bytes, coding);
  // The identity tag with the coding's name inside the quotes: still strong, distinct per coding.
  const form = { bytes, length: bytes.length, etag: `${identity.etag.slice(0, -1)}-${coding}"`, coding, variesByEncoding: true };
  tagged.ready[coding] = form;
  return form;
}

/** Adds a field name to `Vary`, keeping what is there (CORS may have put `Origin`). */
export function addVary(reply: FastifyReply, field: string): void {
  const current = reply.getHeader('vary');
  reply.header('Vary', current === undefined || current === '' ? field : `${String(current)}, ${field}`);
}

/**
 * Whether If-None-Match names `etag` (RFC 9110 §13.1.2: weak comparison, `*` matches any current
 * representation): the answer is then a 304.
 */
export function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return (tag.startsWith('W/') ? tag.slice(2) : tag) === etag;
  });
}

/**
 * A 200 JSON body as the route's compiled response schema writes it (the same bytes Fastify would
 * send), or as `schema` writes it where the answer has a narrower shape than the route declares, so
 * that it can be tagged and kept as text.
 */
export function serializeOk(reply: FastifyReply, payload: object, schema?: object): string {
  if (schema !== undefined) return reply.compileSerializationSchema(schema as Record<string, unknown>)(payload as Record<string, unknown>);
  const compiled = reply.getSerializationFunction('200', 'application/json') ?? reply.getSerializationFunction('200');
  return typeof compiled === 'function' ? compiled(payload as Record<string, unknown>) : JSON.stringify(payload);
}
