import type { FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify';
import { parseJsonKeepingNumbers } from '../../catalogue/parse-json.js';
import { HttpProblem } from '../contract/problem.js';

/** The contract's body limit: 16 KiB, inclusive. */
export const BODY_LIMIT_BYTES = 16_384;

/** The one media type of bodies the service reads. */
export const JSON_MEDIA_TYPE = 'application/json';

export const UNSUPPORTED_MEDIA_TYPE = 'Send the product as JSON, with the header Content-Type: application/json.';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Replaces Fastify's body parsers with one strict JSON parser.
 *
 * Stock `JSON.parse` cannot serve the contract: it replaces invalid UTF-8 with U+FFFD instead of
 * refusing it, and turns `12.50` and `1e3` into doubles, losing the text the price rules need.
 * `lossless-json` keeps each number's text (as a `JsonNumber`) and defines `__proto__` keys as plain
 * data, as `JSON.parse` does. Every other content type is answered 415 by Fastify.
 */
export function useStrictJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // On a route that reads a body, a coding the service does not undo is refused on the request's head,
  // before the body is read: no `100 Continue` invites the upload, and a small body is drained, so the
  // connection carries the next request (docs/API.md, "Expect: 100-continue"). Only there: every other
  // request would pay for a hook with nothing to do. The parser checks again for any other body it reads.
  const refuseOnHead: preParsingHookHandler = (request, _reply, payload, done) => {
    try {
      if (request.mediaType === JSON_MEDIA_TYPE) refuseUnknownCodings(request);
      done(null, payload);
    } catch (error) {
      done(error as Error);
    }
  };
  app.addHook('onRoute', (route) => {
    if (route.schema?.body === undefined) return;
    route.preParsing = [...(route.preParsing === undefined ? [] : [route.preParsing].flat()), refuseOnHead];
  });
  app.addContentTypeParser(JSON_MEDIA_TYPE, { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES }, (request: FastifyRequest, raw: Buffer | string, done) => {
    try {
      refuseUnknownCodings(request);
      done(null, parseJsonBody(typeof raw === 'string' ? Buffer.from(raw) : raw));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/**
 * Refuses a body in a content coding the service does not undo, which it would otherwise read as plain
 * JSON.
 * @throws HttpProblem 415 for a `Content-Encoding` other than `identity` (RFC 9110 §8.4).
 */
function refuseUnknownCodings(request: FastifyRequest): void {
  const content = unknownContentCodings(request);
  if (content.length > 0) {
    const named = nameable(content) ? `Content-Encoding: ${content.join(', ')}` : 'a Content-Encoding other than identity';
    throw new HttpProblem(415, `The body is encoded (${named}), which the service does not decode; send it as plain JSON.`);
  }
}

/**
 * The refusal of a request whose body comes in a transfer coding the service does not undo, on any
 * method: Node's parser undoes `chunked` alone, and passes the rest of `Transfer-Encoding: gzip, chunked`
 * on undone. A 400: RFC 9112 §6.1 suggests 501, but a 5xx here says the service failed, and operators
 * are woken by those; it is the client's request that cannot be read. `undefined` when there is none.
 */
export function unknownTransferCoding(header: string | undefined): HttpProblem | undefined {
  const transfer = codings(header).filter((coding) => coding !== 'chunked');
  if (transfer.length === 0) return undefined;
  const named = nameable(transfer) ? `The transfer coding ${transfer.join(', ')} is` : 'Transfer codings other than chunked are';
  return new HttpProblem(400, `${named} not supported; send the body with Content-Length or chunked alone.`, { headers: { Connection: 'close' } });
}

/**
 * Whether a refusal may name these codings back: a few short names (RFC 9110 tokens), as real
 * codings are. A header may hold anything up to the 16 KiB of a request's head, in bytes Node reads as
 * Latin-1, which a problem document would repeat garbled or whole.
 */
function nameable(codings: readonly string[]): boolean {
  return codings.length <= 4 && codings.every((coding) => /^[!#$%&'*+.^_`|~0-9a-z-]{1,32}$/.test(coding));
}

/**
 * Whether the body comes in a content coding the service does not undo, and will be refused unread
 * (one in a transfer coding it does not undo is refused before: `unknownTransferCoding`).
 */
export function hasUnknownCodings(request: FastifyRequest): boolean {
  return unknownContentCodings(request).length > 0;
}

function unknownContentCodings(request: FastifyRequest): string[] {
  return codings(request.headers['content-encoding']).filter((coding) => coding !== 'identity');
}

/** The codings a header lists, lowercased; none when it is absent. */
function codings(header: string | undefined): string[] {
  return header === undefined ? [] : header.split(',').map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== '');
}

/**
 * Decodes a request body as strict UTF-8 JSON, numbers kept as written.
 * @throws HttpProblem 400 for an empty body, invalid UTF-8 or invalid JSON.
 */
export function parseJsonBody(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new HttpProblem(400, 'The body is not valid UTF-8, so it is not JSON.');
  }
  if (text.trim() === '') throw new HttpProblem(400, 'The body is empty; send a JSON object.');
  try {
    return parseJsonKeepingNumbers(text);
  } catch (error) {
    // A RangeError is a stack overflow from absurd nesting: still the client's malformed body.
    const reason = error instanceof SyntaxError ? `: ${error.message}` : ': it is nested too deep to read (a product is one object of strings and numbers)';
    throw new HttpProblem(400, `The body is not valid JSON${reason}.`);
  }
}
