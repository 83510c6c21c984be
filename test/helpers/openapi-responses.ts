import { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { REFUSED_METHODS_EXTENSION, openApiPath } from '../../src/http/contract/docs.js';

interface DocumentedResponse {
  readonly content?: Record<string, unknown>;
}
type Operation = { readonly responses?: Record<string, DocumentedResponse> };
/** What a path says about the methods it does not serve: the `Allow` it answers them with, and the answer. */
type RefusedMethods = { readonly allow: string; readonly response: DocumentedResponse };
type PathItem = Record<string, Operation | undefined> & { readonly [REFUSED_METHODS_EXTENSION]?: RefusedMethods };
type Document = { readonly paths?: Record<string, PathItem | undefined> };

const DOCUMENT_ID = 'openapi.json';
const PROBLEM = 'application/problem+json';
/** Where the answers of paths outside the document (no route, a missing asset) are looked up. */
const PROBLEM_RESPONSE: DocumentedResponse = { content: { [PROBLEM]: {} } };
const PROBLEM_SCHEMA_POINTER = '/components/schemas/Problem';

export interface ResponseAudit {
  /** Every answer so far that the OpenAPI document does not describe, one line each. */
  readonly mismatches: readonly string[];
}

/**
 * Checks every answer `app` sends against its own OpenAPI document: the status must be documented
 * for the route and method, the media type must be one the document names, and the body must
 * validate against that media type's schema. A method a documented path does not serve must be
 * refused as the path says (405, its `Allow`, its answer's schema). Paths outside the document (the
 * page, the docs, a path that is no route) are only held to the document's Problem schema when they
 * answer an error.
 */
export function auditResponses(app: FastifyInstance): ResponseAudit {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const mismatches: string[] = [];

  /** A schema inside the document, compiled by its JSON pointer so that its $refs to components resolve. */
  const validatorAt = (pointer: string): ValidateFunction => {
    if (ajv.getSchema(DOCUMENT_ID) === undefined) ajv.addSchema(app.swagger() as object, DOCUMENT_ID);
    let validate = compiled.get(pointer);
    if (validate === undefined) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };

  const check = (request: FastifyRequest, reply: FastifyReply, body: string): void => {
    const document = app.swagger() as Document;
    const method = request.method.toLowerCase();
    const routeUrl = request.routeOptions.url;
    const template = routeUrl === undefined ? undefined : openApiPath(routeUrl);
    const pathItem = template === undefined ? undefined : document.paths?.[template];
    const operation = pathItem?.[method];
    const where = `${request.method} ${request.url} -> ${reply.statusCode}`;
    const status = String(reply.statusCode);

    let documented: DocumentedResponse | undefined;
    let schemaPointer: (mediaType: string) => string;
    if (pathItem !== undefined && operation === undefined && reply.statusCode === 405) {
      const refused = pathItem[REFUSED_METHODS_EXTENSION];
      if (refused === undefined) {
        mismatches.push(`${where}: ${template} does not describe how it refuses methods`);
        return;
      }
      const allow = reply.getHeader('allow');
      if (allow !== refused.allow) {
        mismatches.push(`${where}: Allow is ${JSON.stringify(allow)}, the document says ${JSON.stringify(refused.allow)}`);
        return;
      }
      documented = refused.response;
      schemaPointer = (mediaType) => `/paths/${escape(template!)}/${REFUSED_METHODS_EXTENSION}/response/content/${escape(mediaType)}/schema`;
    } else if (pathItem !== undefined && operation === undefined && reply.statusCode < 400) {
      mismatches.push(`${where}: ${request.method} is not an operation of ${template}`);
      return;
    } else if (operation !== undefined) {
      documented = operation.responses?.[status];
      if (documented === undefined) {
        mismatches.push(`${where}: status not documented for ${request.method} ${template}`);
        return;
      }
      schemaPointer = (mediaType) => `/paths/${escape(template!)}/${method}/responses/${status}/content/${escape(mediaType)}/schema`;
    } else if (reply.statusCode >= 400) {
      documented = PROBLEM_RESPONSE;
      schemaPointer = () => PROBLEM_SCHEMA_POINTER;
    } else {
      return;
    }

    if (request.method === 'HEAD') return;
    const mediaType = String(reply.getHeader('content-type') ?? '').split(';')[0]!.trim();
    if (documented.content === undefined) {
      if (body !== '') mismatches.push(`${where}: documented without a body, but sent ${mediaType}`);
      return;
    }
    if (!Object.hasOwn(documented.content, mediaType)) {
      mismatches.push(`${where}: media type ${JSON.stringify(mediaType)} is not one of ${Object.keys(documented.content).join(', ')}`);
      return;
    }
    // A stream of server-sent events is text, not one JSON document: its media type is what is checked.
    if (mediaType === 'text/event-stream') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      mismatches.push(`${where}: body is not JSON: ${body.slice(0, 80)}`);
      return;
    }
    const validate = validatorAt(schemaPointer(mediaType));
    if (!validate(parsed)) mismatches.push(`${where}: ${ajv.errorsText(validate.errors)}; body ${body.slice(0, 200)}`);
  };

  const guardedCheck = (request: FastifyRequest, reply: FastifyReply, body: string): void => {
    try {
      check(request, reply, body);
    } catch (error) {
      mismatches.push(`${request.method} ${request.url}: the audit itself failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  app.addHook('onSend', async (request, reply, payload) => {
    if (payload instanceof Readable) {
      // A streamed body is checked once it has all gone out, without holding it back.
      const chunks: Buffer[] = [];
      return Readable.from(
        (async function* () {
          for await (const chunk of payload as AsyncIterable<Buffer | string>) {
            chunks.push(Buffer.from(chunk));
            yield chunk;
          }
          guardedCheck(request, reply, decoded(reply, Buffer.concat(chunks)));
        })(),
      );
    }
    const text = payload === null || payload === undefined ? '' : Buffer.isBuffer(payload) ? decoded(reply, payload) : String(payload);
    guardedCheck(request, reply, text);
    return payload;
  });
  return { mismatches };
}

/** A body's text, decoded from the content coding it is sent in. */
function decoded(reply: FastifyReply, bytes: Buffer): string {
  const coding = reply.getHeader('content-encoding');
  if (bytes.length === 0 || coding === undefined) return bytes.toString('utf8');
  return (coding === 'br' ? brotliDecompressSync(bytes) : gunzipSync(bytes)).toString('utf8');
}

/** A JSON pointer segment (RFC 6901). */
function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
