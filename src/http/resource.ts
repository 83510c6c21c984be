import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyInstance,
  FastifySchema,
  HTTPMethods,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from 'fastify';
import Type from 'typebox';
import { CORS_METHODS } from './answer-headers.js';
import { TAGS } from './docs.js';
import { HttpProblem } from './problem.js';
import { HOST_NOT_VALID, emptyResponse } from './responses.js';

type Method = 'GET' | 'POST';

/**
 * One method's route. The handler's `request` is typed from the schema by the TypeBox type provider:
 * `request.params` is what `schema.params` declares, with no cast.
 */
export interface MethodRoute<S extends FastifySchema = FastifySchema> {
  readonly options: RouteShorthandOptions<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, RouteGenericInterface, ContextConfigDefault, S, TypeBoxTypeProvider> & {
    readonly schema: S;
  };
  readonly handler: RouteHandlerMethod<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, RouteGenericInterface, ContextConfigDefault, S, TypeBoxTypeProvider>;
}

interface Methods<G extends FastifySchema, P extends FastifySchema> {
  readonly GET?: MethodRoute<G>;
  readonly POST?: MethodRoute<P>;
}

/**
 * Registers one path with the methods it serves, its CORS preflight, and a 405 with `Allow` for every
 * other method Fastify knows (Fastify itself would answer those 404).
 *
 * HEAD is served wherever GET is (Fastify derives it from the GET route). The document lists the
 * served methods and the preflight as operations; refusals are described on the path, not listed.
 */
export function resource<G extends FastifySchema, P extends FastifySchema>(app: FastifyInstance, url: string, methods: Methods<G, P>): void {
  const served = (['GET', 'POST'] as const).filter((m) => methods[m] !== undefined);
  const allowed: string[] = served.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
  allowed.push('OPTIONS');
  const allow = allowed.join(', ');
  const schemas = served.map((m) => methods[m]!.options.schema);
  const hidden = schemas.every((schema) => schema.hide === true);

  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const add = <S extends FastifySchema>(method: Method, route: MethodRoute<S>): void => {
    typed.route<RouteGenericInterface, ContextConfigDefault, S>({ ...route.options, schema: withHostProblem(route.options.schema), method, url, handler: route.handler });
  };
  if (methods.GET !== undefined) add('GET', methods.GET);
  if (methods.POST !== undefined) add('POST', methods.POST);
  app.route({
    method: 'OPTIONS',
    url,
    schema: hidden ? { hide: true } : {
      operationId: `${schemas[0]?.operationId}Preflight`,
      summary: 'CORS preflight',
      description: 'Answered 200 for any caller, with or without `Origin`, whatever body it carries. Ordinary answers carry `Access-Control-Allow-Origin` too.',
      tags: [TAGS.preflight],
      response: {
        200: emptyResponse('The preflight answer; no body.', {
          Allow: Type.String({ examples: [allow] }),
          'Access-Control-Allow-Origin': Type.String({ description: '`*` unless the deployment lists origins (CORS_ORIGIN).', examples: ['*'] }),
          'Access-Control-Allow-Methods': Type.String({ examples: [CORS_METHODS] }),
          'Access-Control-Allow-Headers': Type.String({ examples: [app.answerHeaders.allowedHeaders] }),
        }),
        400: HOST_NOT_VALID,
      },
    },
    // Answered before the body is read: a preflight is a 200 whatever body or type it carries.
    onRequest: async (_request, reply) => app.answerHeaders.preflight(reply, allow),
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
  // Described on the path in the document (see docs.ts), not offered as operations a client could call.
  app.route({ ...refused, method: others, schema: { hide: true } });
}

/** Every route refuses a malformed `Host` with a 400; an operation that has no 400 of its own says so. */
function withHostProblem<S extends FastifySchema>(schema: S): S {
  const response = schema.response as Record<string, unknown> | undefined;
  if (response === undefined || Object.hasOwn(response, '400')) return schema;
  return { ...schema, response: { ...response, 400: HOST_NOT_VALID } };
}
