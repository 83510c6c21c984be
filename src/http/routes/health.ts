import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { StoreBusyError, StoreUnavailableError } from '../../catalogue/errors.js';
import type { CatalogueStore } from '../../storage/store.js';
import type { WorkerGroup } from '../../workers/worker-group.js';
import { resource } from './resource.js';
import { STORE_UNAVAILABLE, jsonResponse } from '../contract/responses.js';

const AliveSchema = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });
const ReadySchema = Type.Object({ status: Type.Literal('ready') }, { additionalProperties: false });

export interface HealthOptions {
  readonly store: CatalogueStore;
  /** With workers, `/readyz` answers for all of them: ready when every worker's database answers. */
  readonly workerGroup?: WorkerGroup | undefined;
}

/**
 * Probes for load balancers and orchestrators: `/healthz` says the process answers (restart it when
 * this fails); `/readyz` says it can serve the catalogue now (send it no traffic while this fails).
 */
export async function health(app: FastifyInstance, { store, workerGroup }: HealthOptions): Promise<void> {
  resource(app, '/healthz', {
    GET: {
      options: {
        schema: {
          operationId: 'checkLiveness',
          summary: 'The process is alive',
          description: 'For restarts: answers while the process can answer at all, whatever the database does.',
          tags: ['health'],
          response: { 200: jsonResponse('The process answers.', AliveSchema) },
        },
      },
      handler: async () => ({ status: 'ok' as const }),
    },
  });

  resource(app, '/readyz', {
    GET: {
      options: {
        schema: {
          operationId: 'checkReadiness',
          summary: 'The database answers: this instance can serve requests',
          description: 'For traffic: a 503 while the database cannot be reached, so that a load balancer sends this instance nothing until it is back.',
          tags: ['health'],
          response: { 200: jsonResponse('The database answers.', ReadySchema), 503: STORE_UNAVAILABLE },
        },
      },
      handler: async () => {
        if (workerGroup === undefined) await store.ping();
        // The primary asks every worker, and only an error's message and name come back across the processes.
        else await workerGroup.ready().catch((error: unknown) => Promise.reject(error instanceof Error && error.name === 'StoreBusyError' ? new StoreBusyError(undefined, error) : new StoreUnavailableError(error)));
        return { status: 'ready' as const };
      },
    },
  });
}
