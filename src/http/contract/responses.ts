import type { FastifyInstance } from 'fastify';
import Type, { type TSchema } from 'typebox';
import { ProblemSchema } from './problem.js';
import { ChangePageSchema, ChangeSchema, NewProductSchema, PageSchema, ProductSchema } from './schemas.js';

/**
 * Adds the wire shapes by their `$id`, so that routes refer to them with `Type.Ref(id)` and the
 * OpenAPI document lists each once, by name, under components.schemas.
 */
export function useSharedSchemas(app: FastifyInstance): void {
  for (const schema of [ProblemSchema, ProductSchema, PageSchema, NewProductSchema, ChangeSchema, ChangePageSchema]) app.addSchema(schema);
}

/**
 * Route response entries in the shape both Fastify (serializer per media type) and @fastify/swagger
 * (description, headers, content) read, so that one declaration feeds serialization and the document.
 */
export interface ResponseEntry {
  readonly description: string;
  readonly headers?: Record<string, TSchema>;
  readonly content?: Record<string, { readonly schema: TSchema }>;
  readonly type?: 'null';
}

export function jsonResponse(description: string, schema: TSchema, headers?: Record<string, TSchema>): ResponseEntry {
  return { description, ...(headers === undefined ? {} : { headers }), content: { 'application/json': { schema } } };
}

export function problemResponse(description: string, headers?: Record<string, TSchema>): ResponseEntry {
  return { description, ...(headers === undefined ? {} : { headers }), content: { 'application/problem+json': { schema: Type.Ref('Problem') } } };
}

/** An answer with headers only, such as a CORS preflight. */
export function emptyResponse(description: string, headers: Record<string, TSchema>): ResponseEntry {
  return { description, headers, type: 'null' };
}

export const ETAG_HEADER = Type.String({
  description: 'A strong validator of these exact bytes: send it back in If-None-Match for a 304 while they are unchanged.',
  examples: ['"LJD-Ixr_mUJBKCghCCERMDPxGRc"'],
});

/**
 * Seconds a client should wait before retrying while the database is unreachable: long enough not to
 * add load to a database coming back, short enough for a till to retry while the customer waits.
 */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** Seconds before retrying a write that found the catalogue busy: other writes hold its lock for milliseconds at a time. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

export const STORE_UNAVAILABLE = problemResponse('The database cannot be reached, did not answer in time, or (for a write) is busy with another write for longer than the service waits; nothing was changed. Retry after the seconds in Retry-After.', {
  'Retry-After': Type.String({ description: 'Seconds to wait before retrying.', examples: [String(STORE_RETRY_AFTER_SECONDS)] }),
});

/** Checked on every route before anything else, because the host is written into page links. */
export const HOST_NOT_VALID = problemResponse('The `Host` header is not a plain host name or address with an optional port (RFC 9112 §3.2).');

/** Checked on every route but the preflight, with the Host (request-address.ts). */
export const ADDRESS_NOT_VALID = problemResponse(
  'The `Host` header is not a plain host name or address with an optional port (RFC 9112 §3.2), or a query parameter is not valid percent-encoding of UTF-8 text; `errors` names it.',
);
