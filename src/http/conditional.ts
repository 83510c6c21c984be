import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { COMPRESS_MIN_BYTES, chooseCoding, compress, type ContentCoding } from './compression.js';

/** A JSON body already serialized, with the strong validator of its exact bytes. */
export interface TaggedBody {
  readonly body: string;
  readonly etag: string;
  /** Its compressed forms, each made on first request and then kept with the body. */
  readonly encoded: Partial<Record<ContentCoding, EncodedBody>>;
}

/** A body in a content coding, with a strong validator of its own: a different representation. */
export interface EncodedBody {
  readonly bytes: Buffer;
  readonly etag: string;
}

/** Tags a serialized body with a strong ETag: a digest of its bytes, so equal bytes give equal tags. */
export function tagBody(body: string): TaggedBody {
  return { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"`, encoded: {} };
}

/**
 * Bytes a cached tagged body holds, about: with room for its compressed forms, which JSON text
 * shrinks to well under a quarter of its length each.
 */
export function taggedSize(tagged: TaggedBody): number {
  return Math.ceil(tagged.body.length * 1.5) + tagged.etag.length;
}

/**
 * Sends a tagged JSON body, compressed when the client accepts it and the body is long enough, or 304
 * with no body when the request's If-None-Match already names the ETag of what it would get
 * (RFC 9110 §13.1.2: weak comparison, `*` matches any current representation).
 */
export function sendTagged(request: FastifyRequest, reply: FastifyReply, tagged: TaggedBody): FastifyReply {
  let etag = tagged.etag;
  let payload: string | Buffer = tagged.body;
  if (tagged.body.length >= COMPRESS_MIN_BYTES) {
    addVary(reply, 'Accept-Encoding');
    const coding = chooseCoding(request.headers['accept-encoding']);
    if (coding !== undefined) {
      const encoded = (tagged.encoded[coding] ??= encode(tagged, coding));
      etag = encoded.etag;
      payload = encoded.bytes;
      reply.header('Content-Encoding', coding);
    }
  }
  reply.header('ETag', etag);
  if (noneMatch(request.headers['if-none-match'], etag)) {
    // HEAD: the body only sizes Content-Length (the 200's own length, as RFC 9110 §8.6 allows) and is
    // dropped; GET: a 304 has no body and no length.
    if (request.method !== 'HEAD') reply.removeHeader('Content-Encoding');
    return reply.code(304).send(request.method === 'HEAD' ? payload : undefined);
  }
  return reply.type('application/json; charset=utf-8').send(payload);
}

function encode(tagged: TaggedBody, coding: ContentCoding): EncodedBody {
  // The identity tag with the coding's name inside the quotes: still strong, distinct per coding.
  return { bytes: compress(tagged.body, coding), etag: `${tagged.etag.slice(0, -1)}-${coding}"` };
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
 * send), so that it can be tagged and cached as text.
 */
export function serializeOk(reply: FastifyReply, payload: object): string {
  const compiled = reply.getSerializationFunction('200', 'application/json') ?? reply.getSerializationFunction('200');
  return typeof compiled === 'function' ? compiled(payload as Record<string, unknown>) : JSON.stringify(payload);
}
