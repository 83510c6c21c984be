// Brings in the OpenAPI fields (summary, tags, hide) of route schemas.
import type {} from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.js';
import { useCors, type CorsSettings } from './http/cors.js';
import { useApiDocs } from './http/docs.js';
import { useProblemErrors } from './http/error-handler.js';
import { health } from './http/health.js';
import { BODY_LIMIT_BYTES, useStrictJsonBodies } from './http/json-body.js';
import { EXTRA_HTTP_METHODS, clientErrorHandler, frameworkErrors } from './http/low-level-errors.js';
import { productsV1 } from './http/products-v1.js';
import { useHostCheck } from './http/request-address.js';
import { productsV2 } from './http/products-v2.js';
import { useSharedSchemas } from './http/responses.js';
import { webPage } from './http/web-page.js';
import type { CatalogueStore } from './storage/store.js';

export interface AppOptions {
  readonly config: Config;
  readonly store: CatalogueStore;
  /** Fastify's logger setting: `false` in tests, pino options in the server. */
  readonly logger?: FastifyServerOptions['logger'];
}

/**
 * Builds the catalogue's HTTP application over a store. It reads no environment and never listens.
 *
 * @example const app = await buildApp({ config: loadConfig({}), store }); await app.listen({ port: 0 });
 */
export async function buildApp({ config, store, logger = false }: AppOptions): Promise<FastifyInstance> {
  const cors: CorsSettings = { origin: config.corsOrigin, allowedHeaders: ['Content-Type'] };
  const app = Fastify({
    logger,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors: frameworkErrors(cors),
    clientErrorHandler: clientErrorHandler(cors),
  });
  for (const method of EXTRA_HTTP_METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true });
  }

  useProblemErrors(app);
  useHostCheck(app);
  useStrictJsonBodies(app);
  await useCors(app, cors);
  await useApiDocs(app);
  useSharedSchemas(app);
  await app.register(health, { store, cors });
  await app.register(productsV1, { store, cors });
  await app.register(productsV2, {
    store,
    cors,
    pagination: config.pagination,
    pageSize: config.pageSize,
    maxLimit: config.maxLimit,
  });
  await app.register(webPage);
  return app;
}
