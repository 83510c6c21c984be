import { Readable } from 'node:stream';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ProblemSchema } from '../../src/http/problem.js';

interface DocumentedResponse {
  readonly content?: Record<string, { readonly schema?: object }>;
}
type Operation = { readonly responses?: Record<string, DocumentedResponse> };
type Document = { readonly paths?: Record<string, Record<string, Operation> | undefined> };

export interface ResponseAudit {
  /** Every answer so far that the OpenAPI document does not describe, one line each. */
  readonly mismatches: readonly string[];
}

/**
 * Checks every answer `app` sends against its own OpenAPI document: the status must be documented
 * for the route and method, the media type must be one the document names, and the body must
 * validate against that media type's schema. Paths outside the document (the page, the docs, a
 * path that is no route) are only held to the problem schema when they answer an error.
 */
export function auditResponses(app: FastifyInstance): ResponseAudit {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const validator = (key: string, schema: object): ValidateFunction => {
    let validate = compiled.get(key);
    if (validate === undefined) {
      validate = ajv.compile(schema);
      compiled.set(key, validate);
    }
    return validate;
  };
  const problem = { content: { 'application/problem+json': { schema: ProblemSchema } } };
  const mismatches: string[] = [];

  const check = (request: FastifyRequest, reply: FastifyReply, body: string): void => {
    const document = app.swagger() as Document;
    const template = request.routeOptions.url?.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const operation = template === undefined ? undefined : document.paths?.[template]?.[request.method.toLowerCase()];
    const where = `${request.method} ${request.url} -> ${reply.statusCode}`;
    let documented: DocumentedResponse | undefined;
    if (operation !== undefined) {
      documented = operation.responses?.[String(reply.statusCode)];
      if (documented === undefined) {
        mismatches.push(`${where}: status not documented for ${request.method} ${template}`);
        return;
      }
    } else if (reply.statusCode >= 400) {
      documented = problem;
    } else {
      return;
    }
    if (request.method === 'HEAD') return;
    const mediaType = String(reply.getHeader('content-type') ?? '').split(';')[0]!.trim();
    if (documented.content === undefined) {
      if (body !== '') mismatches.push(`${where}: documented without a body, but sent ${mediaType}`);
      return;
    }
    const schema = documented.content[mediaType]?.schema;
    if (schema === undefined) {
      mismatches.push(`${where}: media type ${JSON.stringify(mediaType)} is not one of ${Object.keys(documented.content).join(', ')}`);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      mismatches.push(`${where}: body is not JSON: ${body.slice(0, 80)}`);
      return;
    }
    const validate = validator(`${template ?? '-'} ${request.method} ${reply.statusCode} ${mediaType}`, schema);
    if (!validate(parsed)) mismatches.push(`${where}: ${ajv.errorsText(validate.errors)}; body ${body.slice(0, 200)}`);
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
          check(request, reply, Buffer.concat(chunks).toString('utf8'));
        })(),
      );
    }
    const text = payload === null || payload === undefined ? '' : Buffer.isBuffer(payload) ? payload.toString('utf8') : String(payload);
    check(request, reply, text);
    return payload;
  });
  return { mismatches };
}
