import type { FastifyInstance, HTTPMethods, RouteShorthandOptions, RouteHandlerMethod } from 'fastify';
import Type from 'typebox';
import { CORS_METHODS, preflight, type CorsSettings } from './cors.js';
import { HttpProblem } from './problem.js';
import { emptyResponse, problemResponse } from './responses.js';

type Method = 'GET' | 'POST';

export interface MethodRoute {
  readonly options: RouteShorthandOptions;
  readonly handler: RouteHandlerMethod;
}

/** Methods an OpenAPI 3.1 path item can describe; refusals of any other method stay out of the document. */
const DOCUMENTABLE_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE'];

export const REFUSED_TAG = 'refused methods';

/**
 * Registers one path with the methods it serves, its CORS preflight, and a 405 with `Allow` for every
 * other method Fastify knows (Fastify itself would answer those 404).
 *
 * HEAD is served wherever GET is (Fastify derives it from the GET route).
 */
export function resource(app: FastifyInstance, cors: CorsSettings, url: string, methods: Partial<Record<Method, MethodRoute>>): void {
  const served = Object.keys(methods) as Method[];
  const allowed: string[] = served.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
  allowed.push('OPTIONS');
  const allow = allowed.join(', ');
  const tags = served.flatMap((m) => methods[m]?.options.schema?.tags ?? []).slice(0, 1);

  for (const method of served) {
    const route = methods[method]!;
    app.route({ ...route.options, method, url, handler: route.handler });
  }
  app.route({
    method: 'OPTIONS',
    url,
    schema: {
      summary: 'CORS preflight',
      description: `Answered 200 for any caller, with or without \`Origin\`. Ordinary answers carry \`Access-Control-Allow-Origin\` too.`,
      tags,
      response: {
        200: emptyResponse('The preflight answer; no body.', {
          Allow: Type.String({ examples: [allow] }),
          'Access-Control-Allow-Origin': Type.String({ description: '`*` unless the deployment lists origins (CORS_ORIGIN).', examples: ['*'] }),
          'Access-Control-Allow-Methods': Type.String({ examples: [CORS_METHODS] }),
          'Access-Control-Allow-Headers': Type.String({ examples: [cors.allowedHeaders.join(', ')] }),
        }),
      },
    },
    // Answered before the body is read: a preflight is a 200 whatever body or type it carries.
    onRequest: async (_request, reply) => preflight(reply, cors, allow),
    handler: async () => undefined,
  });

  const others = app.supportedMethods.filter((m) => !allowed.includes(m)) as HTTPMethods[];
  const refused = {
    url,
    // Refused before the body is read, so a wrong method is a 405 whatever body it carries.
    onRequest: async (request: { method: string }) => {
      throw new HttpProblem(405, `${request.method} is not allowed here; this address answers ${allow}.`, { headers: { Allow: allow } });
    },
    handler: async () => undefined,
  };
  app.route({
    ...refused,
    method: others.filter((m) => DOCUMENTABLE_METHODS.includes(m)),
    schema: {
      summary: `Not allowed: this address answers ${allow}`,
      tags: [REFUSED_TAG],
      response: { 405: problemResponse('The method is not served here.', { Allow: Type.String({ description: "The address's methods.", examples: [allow] }) }) },
    },
  });
  const undocumentable = others.filter((m) => !DOCUMENTABLE_METHODS.includes(m));
  if (undocumentable.length > 0) app.route({ ...refused, method: undocumentable, schema: { hide: true } });
}
