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
import { CORS_METHODS } from '../contract/answer-headers.js';
import { TAGS } from '../contract/docs.js';
import { nothingAt } from '../guards/error-handler.js';
import { HttpProblem } from '../contract/problem.js';
import { ADDRESS_NOT_VALID, HOST_NOT_VALID, emptyResponse } from '../contract/responses.js';

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
    typed.route<RouteGenericInterface, ContextConfigDefault, S>({ ...route.options, schema: withAddressProblem(route.options.schema), method, url, handler: route.handler });
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
      throw methodNotAllowed(request.method, allow);
    },
    handler: async () => undefined,
  };
  // Described on the path in the document (see docs.ts), not offered as operations a client could call.
  app.route({ ...refused, method: others, schema: { hide: true } });
}

/** What the page and the docs answer besides GET and HEAD (which Fastify derives from GET). */
const PAGE_ALLOW = 'GET, HEAD, OPTIONS';

/**
 * Gives the paths served by GET alone (the page and its assets, the API reference and its assets, the
 * document, the contract) what `resource` gives the API's paths: the CORS preflight on OPTIONS, and a
 * 405 with `Allow` for any other method, instead of the 404 of a path that is no route. These paths
 * come from plugins (@fastify/static, @fastify/swagger-ui), wildcards included, so they are answered
 * where the router finds no route for the method: such a request is a 405 when the router has a GET
 * route for its path, else the 404 of a path that is nothing. Register after the answer headers and
 * the Host check, whose hooks come first.
 */
export function usePageMethods(app: FastifyInstance): void {
  // A callback hook: an async one costs a promise per request for no waiting.
  app.addHook('onRequest', (request, reply, done) => {
    // The asterisk-form target (`GET * HTTP/1.1`) names no resource, only the server as a whole, for
    // OPTIONS (RFC 9112 §3.2.4). The router would take it for the page's path; it is a 404 for every
    // method, OPTIONS included: there is no server-wide preflight, CORS is per path.
    if (request.url === '*') return done(new HttpProblem(404, nothingAt(request)));
    if (!request.is404 || request.method === 'GET' || request.method === 'HEAD') return done();
    const query = request.url.indexOf('?');
    const path = query === -1 ? request.url : request.url.slice(0, query);
    // A path that is nothing is a 404 whatever the method, answered before Fastify looks at a body it
    // would never read (its QUERY needs a Content-Type, its 400 says so in its own words).
    if (!path.startsWith('/') || app.findRoute({ method: 'GET', url: path }) === null) return done(new HttpProblem(404, nothingAt(request)));
    // Answered before the body is read, as on the API's paths.
    if (request.method === 'OPTIONS') {
      app.answerHeaders.preflight(reply, PAGE_ALLOW);
      return undefined;
    }
    return done(methodNotAllowed(request.method, PAGE_ALLOW));
  });
}

function methodNotAllowed(method: string, allow: string): HttpProblem {
  return new HttpProblem(405, `${method} is not allowed here; this address answers ${allow}.`, { headers: { Allow: allow } });
}

/** Every route refuses a malformed `Host` or query with a 400; an operation that has no 400 of its own says so. */
function withAddressProblem<S extends FastifySchema>(schema: S): S {
  const response = schema.response as Record<string, unknown> | undefined;
  if (response === undefined || Object.hasOwn(response, '400')) return schema;
  return { ...schema, response: { ...response, 400: ADDRESS_NOT_VALID } };
}
