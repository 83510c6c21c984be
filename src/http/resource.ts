import type { FastifyInstance, HTTPMethods, RouteShorthandOptions, RouteHandlerMethod } from 'fastify';
import { preflight, type CorsSettings } from './cors.js';
import { HttpProblem } from './problem.js';

type Method = 'GET' | 'POST';

export interface MethodRoute {
  readonly options: RouteShorthandOptions;
  readonly handler: RouteHandlerMethod;
}

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

  for (const method of served) {
    const route = methods[method]!;
    app.route({ ...route.options, method, url, handler: route.handler });
  }
  app.route({ method: 'OPTIONS', url, schema: { hide: true }, handler: (_request, reply) => preflight(reply, cors, allow) });

  const others = app.supportedMethods.filter((m) => !allowed.includes(m)) as HTTPMethods[];
  app.route({
    method: others,
    url,
    schema: { hide: true },
    // Refused before the body is read, so a wrong method is a 405 whatever body it carries.
    onRequest: async (request) => {
      throw new HttpProblem(405, `${request.method} is not allowed here; this address answers ${allow}.`, { headers: { Allow: allow } });
    },
    handler: async () => undefined,
  });
}
