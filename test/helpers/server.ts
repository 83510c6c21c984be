import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config, type DatabaseLocation } from '../../src/config.js';
import { openStore, type StoreOptions } from '../../src/storage/open-store.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { ensureBuild } from './build.js';
import { auditResponses } from './openapi-responses.js';
import type { TestStore } from './stores.js';

export interface RunningServer {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  readonly config: Config;
  readonly location: DatabaseLocation;
  readonly app: FastifyInstance;
  readonly store: CatalogueStore;
  /**
   * Stops the server and closes the store; the database is kept.
   * @throws when any answer the server sent did not match its OpenAPI document.
   */
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** Stands between the app and its store, e.g. to count the store's reads; the store itself is closed. */
  readonly wrapStore?: (store: CatalogueStore) => CatalogueStore;
  /** Off unless a test turns it on: the suite's own pauses of the shared event loop are no overload. */
  readonly refuseWhenOverloaded?: boolean;
  /** How the store is opened, beyond the settings. */
  readonly storeOptions?: StoreOptions;
}

/**
 * Starts the real app on a real socket (port 0) over a database location, with settings given as
 * the environment would give them.
 */
export async function startServer(location: DatabaseLocation, env: Record<string, string> = {}, options: ServerOptions = {}): Promise<RunningServer> {
  // The page and the contract the app serves are read from the build.
  await ensureBuild();
  const config = loadConfig({ ...env });
  const store = await openStore(location, { ...options.storeOptions, poolMax: config.dbPoolMax, writeWaitMs: config.writeWaitMs });
  // The suite's own work pauses the event loop it shares with the service: that is no overload.
  const refuseWhenOverloaded = options.refuseWhenOverloaded ?? false;
  const app = await buildApp({ config, store: options.wrapStore?.(store) ?? store, refuseWhenOverloaded });
  const audit = auditResponses(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    location,
    app,
    store,
    stop: async () => {
      await app.close();
      await store.close();
      if (audit.mismatches.length > 0) {
        throw new Error(`Answers that do not match /openapi.json:\n${audit.mismatches.join('\n')}`);
      }
    },
  };
}

/** A fresh database of `testStore` with a server over it; `stop()` also drops the database. */
export async function startFreshServer(testStore: TestStore, env: Record<string, string> = {}, options: ServerOptions = {}): Promise<RunningServer> {
  const { location, drop } = await testStore.create();
  const server = await startServer(location, env, { storeOptions: testStore.storeOptions, ...options });
  return {
    ...server,
    stop: async () => {
      try {
        await server.stop();
      } finally {
        await drop();
      }
    },
  };
}
