import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { WholeListSettings } from '../../src/http/routes/products-v1.js';
import { closeConnectionsOnStop } from '../../src/http/connection/stop.js';
import { loadConfig, type Config, type DatabaseLocation } from '../../src/config.js';
import { openStore, type StoreOptions } from '../../src/storage/open-store.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { ensureBuild, ROOT } from './build.js';
import { databaseUrl, spawnServer, TEST_WORKERS } from './child-server.js';
import { auditResponses } from './openapi-responses.js';
import type { TestStore } from './stores.js';

export interface RunningServer {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  readonly config: Config;
  readonly location: DatabaseLocation;
  /** The app itself: only where it runs in the test's process (see `ServerOptions.inProcess`). */
  readonly app: FastifyInstance;
  /** The server's store, or under `TEST_WORKERS` a store of the test's own over the same database. */
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
  /** Runs once the app is built, before it listens: what a slow start does there. */
  readonly beforeListen?: () => Promise<void>;
  /**
   * The test reads the app itself (its Node server): it runs in the test's process even when the suite
   * runs its servers as workers. So does a server with `wrapStore` or `refuseWhenOverloaded`.
   */
  readonly inProcess?: boolean;
  /** The app's logger (Fastify's setting); none unless told. A server with one runs in the test's process. */
  readonly logger?: FastifyServerOptions['logger'];
  /** Where the v1 list is streamed and its rows per step (the app's option). A server with it runs in the test's process. */
  readonly wholeList?: WholeListSettings;
}

/**
 * Starts the real app on a real socket (port 0) over a database location, with settings given as
 * the environment would give them.
 */
export async function startServer(location: DatabaseLocation, env: Record<string, string> = {}, options: ServerOptions = {}): Promise<RunningServer> {
  // The page and the contract the app serves are read from the build.
  await ensureBuild();
  const inProcess = options.inProcess === true || options.wrapStore !== undefined || options.refuseWhenOverloaded === true || options.logger !== undefined || options.wholeList !== undefined;
  const inMemory = location.kind === 'sqlite' && location.path === ':memory:';
  if (TEST_WORKERS !== '1' && !inProcess && !inMemory) return startWorkers(location, env, options);
  const config = loadConfig({ ...env });
  const store = await openStore(location, { ...options.storeOptions, poolMax: config.dbPoolMax, writeWaitMs: config.writeWaitMs });
  // The suite's own work pauses the event loop it shares with the service: that is no overload.
  const refuseWhenOverloaded = options.refuseWhenOverloaded ?? false;
  const app = await buildApp({ config, store: options.wrapStore?.(store) ?? store, refuseWhenOverloaded, logger: options.logger ?? false, ...(options.wholeList === undefined ? {} : { wholeList: options.wholeList }) });
  const audit = auditResponses(app);
  // Stopped as the service stops (src/server.ts): a connection that owes nothing is closed at once. Left
  // to app.close() alone, one a client opened and never used held the stop for Node's 60 s headersTimeout.
  const connections = closeConnectionsOnStop(app.server);
  await options.beforeListen?.();
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    location,
    app,
    store,
    stop: async () => {
      connections.stopping();
      await app.close();
      await store.close();
      if (audit.mismatches.length > 0) {
        throw new Error(`Answers that do not match /openapi.json:\n${audit.mismatches.join('\n')}`);
      }
    },
  };
}

/**
 * The service as `npm start` runs it, built, with `TEST_WORKERS` processes over the location: how CI
 * runs the HTTP suite a second time, so that every behaviour is shown to hold across workers.
 */
async function startWorkers(location: DatabaseLocation, env: Record<string, string>, options: ServerOptions): Promise<RunningServer> {
  const config = loadConfig({ ...env, WORKERS: TEST_WORKERS });
  const child = await spawnServer({ ...env, DATABASE_URL: databaseUrl(location), WORKERS: TEST_WORKERS }, [join(ROOT, 'dist', 'server.js')]);
  const store = await openStore(location, { ...options.storeOptions, poolMax: 2 });
  return {
    url: child.url,
    config,
    location,
    get app(): FastifyInstance {
      throw new Error(`The service runs as ${TEST_WORKERS} worker processes (TEST_WORKERS): a test that reads the app must start it with { inProcess: true }.`);
    },
    store,
    stop: async () => {
      const { code, signal } = await child.stop();
      await store.close();
      if (code !== 0) throw new Error(`The service ended with ${signal ?? `exit status ${code}`} when stopped:\n${child.stderr()}`);
    },
  };
}

/** A fresh database of `testStore` with a server over it; `stop()` also drops the database. */
export async function startFreshServer(testStore: TestStore, env: Record<string, string> = {}, options: ServerOptions = {}): Promise<RunningServer> {
  const { location, drop } = await testStore.create();
  const server = await startServer(location, env, { storeOptions: testStore.storeOptions, ...options });
  const stop = async (): Promise<void> => {
    try {
      await server.stop();
    } finally {
      await drop();
    }
  };
  // Descriptors, not a spread: a spread would read `app`, which a server of worker processes refuses.
  return Object.defineProperties({}, { ...Object.getOwnPropertyDescriptors(server), stop: { value: stop, enumerable: true } }) as RunningServer;
}
