import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** A JSON body already serialized, with the strong validator of its exact bytes. */
export interface TaggedBody {
  readonly body: string;
  readonly etag: string;
}

/** Tags a serialized body with a strong ETag: a digest of its bytes, so equal bytes give equal tags. */
export function tagBody(body: string): TaggedBody {
  return { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"` };
}

/** Bytes a cached tagged body holds, about. */
export function taggedSize(tagged: TaggedBody): number {
  return tagged.body.length + tagged.etag.length;
}

/**
 * Sends a tagged JSON body, or 304 with no body when the request's If-None-Match already names its
 * ETag (RFC 9110 §13.1.2: weak comparison, `*` matches any current representation).
 */
export function sendTagged(request: FastifyRequest, reply: FastifyReply, tagged: TaggedBody): FastifyReply {
  reply.header('ETag', tagged.etag);
  if (noneMatch(request.headers['if-none-match'], tagged.etag)) {
    // HEAD: the body only sizes Content-Length (the 200's own length, as RFC 9110 §8.6 allows) and is
    // dropped; GET: a 304 has no body and no length.
    return reply.code(304).send(request.method === 'HEAD' ? tagged.body : undefined);
  }
  return reply.type('application/json; charset=utf-8').send(tagged.body);
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
