import type { Server } from 'node:http';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { redactPassword, startupWarnings } from './config.js';
import { errorCode, errorMessage } from './error-details.js';
import { loggerOptions } from './http/observability/logging.js';
import { OVERLOAD } from './http/guards/overload.js';
import { SchemaNotCurrentError } from './storage/migrations.js';
import { closeConnectionsOnStop } from './http/connection/stop.js';
import { openStore } from './storage/open-store.js';
import { joinWorkerGroup } from './workers/worker-group.js';
import { SHUTDOWN_GRACE_MS, type OnStopSignal } from './service.js';

/**
 * How long a stop waits, once every answer is written, for the database to let go of its connections.
 * A database gone silent never answers their goodbye (PostgreSQL behind a network that drops packets):
 * the process exits without it, as the connections end with it, and nothing is owed to any client.
 */
const STORE_CLOSE_WAIT_MS = 1_000;

/** How often the service looks for bulk writes (imports, removals) whose process died, to undo them. */
const ABANDONED_WRITES_CHECK_MS = 30_000;

/**
 * Serves the catalogue in this process, alone or as one of the workers: opens the store, builds the
 * app and listens. Loaded only where it serves, so that the workers' primary, which only starts and
 * stops them, does not load the app and its dependencies.
 */
export async function serveProcess(config: Config, onStopSignal: OnStopSignal): Promise<void> {
  const workerGroup = joinWorkerGroup(config.workers);

  const where = config.database.kind === 'sqlite' ? `sqlite:${config.database.path}` : redactPassword(config.database.url);
  let store;
  try {
    store = await openStore(config.database, { poolMax: poolShare(config.dbPoolMax, workerGroup?.size ?? 1), writeNotices: workerGroup?.writeNotices, writeWaitMs: config.writeWaitMs, migrate: config.migrateOnStart });
  } catch (error) {
    if (error instanceof SchemaNotCurrentError) {
      console.error(`${error.message} Run \`npx catalogue migrate\` first (MIGRATE_ON_START is false).`);
    } else {
      console.error(`Cannot open the database ${where}: ${errorMessage(error)}`);
    }
    process.exit(1);
  }

  const app = await buildApp({ config, store, logger: loggerOptions(config.logLevel), workerGroup });
  const connections = closeConnectionsOnStop(app.server);
  try {
    await app.listen({ port: config.port, host: config.host, backlog: OVERLOAD.listenBacklog });
  } catch (error) {
    console.error(listenProblem(error, config.host, config.port));
    await store.close().catch(() => undefined);
    process.exit(1);
  }
  app.log.info(`catalogue on ${where}, ${config.pagination} pagination`);
  // With workers the primary says when all of them listen.
  if (workerGroup === undefined) app.log.info(`serving at ${listeningAt(app.server.address())} with one process`);
  for (const warning of startupWarnings(config)) app.log.warn(warning);

  // What a killed import or removal wrote is undone here when no other bulk write comes to do it.
  const undoAbandonedWrites = (): void => {
    store.undoAbandonedBulkWrites().then(
      (undone) => {
        if (undone > 0) app.log.warn(`undid ${undone} bulk write${undone === 1 ? '' : 's'} (import, removal) whose process had stopped half-way`);
      },
      (error: unknown) => app.log.warn({ err: error }, 'looking for abandoned bulk writes failed'),
    );
  };
  undoAbandonedWrites();
  setInterval(undoAbandonedWrites, ABANDONED_WRITES_CHECK_MS).unref();
  // Names bulk-loaded with plain SQL are folded for search from now on, while the service answers.
  store.foldInBackground();

  let stopping = false;
  onStopSignal((signal) => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal} received; finishing requests in flight`);
    const timer = setTimeout(() => {
      app.log.error('requests did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    timer.unref();
    void connections
      .acceptPending()
      .then(() => {
        connections.stopping();
        return app.close();
      })
      .then(() => closeWithin(store, STORE_CLOSE_WAIT_MS, () => app.log.warn(`the database did not close its connections within ${STORE_CLOSE_WAIT_MS / 1000} s of the last answer; exiting without waiting for it`)))
      .then(
        () => process.exit(0),
        (error: unknown) => {
          app.log.error(error, 'stopping failed');
          process.exit(1);
        },
      );
  });
}


/** Closes `store`, or calls `gaveUp` and resolves once `waitMs` have passed without it closing. */
function closeWithin(store: { close(): Promise<void> }, waitMs: number, gaveUp: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      gaveUp();
      resolve();
    }, waitMs);
    store.close().then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * This process's share of the instance's `DB_POOL_MAX` connections, so that `WORKERS=auto` on a large
 * machine does not multiply them past the database's own limit; at least 2 per worker, so that a
 * worker's writes never wait behind its reads for one connection. One process keeps the setting as given.
 */
function poolShare(poolMax: number, workers: number): number {
  return workers === 1 ? poolMax : Math.max(2, Math.ceil(poolMax / workers));
}

function listeningAt(address: ReturnType<Server['address']>): string {
  if (address === null || typeof address === 'string') return String(address);
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

/** One line saying why the service cannot listen, instead of the error's stack. */
function listenProblem(error: unknown, host: string, port: number): string {
  const code = errorCode(error);
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE') return `Cannot listen on ${where}: the port is in use by another process (set PORT to another port).`;
  if (code === 'EACCES') return `Cannot listen on ${where}: permission denied (ports below 1024 need privileges; set PORT to 1024 or above).`;
  if (code === 'EADDRNOTAVAIL') return `Cannot listen on ${where}: this machine has no such address (set HOST to one of its addresses).`;
  return `Cannot listen on ${where}: ${errorMessage(error)}`;
}

