import cluster from 'node:cluster';
import { pino } from 'pino';
import { staleBuildProblem } from './build-freshness.js';
import { ConfigError, loadConfig } from './config.js';
import { hideSqliteExperimentalWarning } from './cli/node-warnings.js';
import { loggerOptions } from './http/observability/logging.js';
import { startPrimary, type StartFailure } from './workers/primary.js';

/** How long in-flight requests may take to finish after a stop signal: the workers' and the primary's. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** What a stop signal does from now on; until the service listens, it ends the start at once. */
export type OnStopSignal = (handler: (signal: NodeJS.Signals) => void) => void;

/**
 * Starts the service as the environment configures it: with workers, as their primary (which starts,
 * replaces and stops them) or as one of them; else as the one process. `onStopSignal` is given what
 * a stop signal must do once there is something to finish.
 */
export async function serve(onStopSignal: OnStopSignal): Promise<void> {
  hideSqliteExperimentalWarning();

  const stale = staleBuildProblem(import.meta.url);
  if (stale !== undefined) {
    console.error(stale);
    process.exit(1);
  }

  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }

  if (config.workers > 1 && cluster.isPrimary) {
    // This process only starts, replaces and stops the workers, which serve; it opens no database.
    const log = pino(loggerOptions(config.logLevel));
    const primary = startPrimary({ workers: config.workers, log, stopGraceMs: SHUTDOWN_GRACE_MS });
    const stopAndExit = (signal: NodeJS.Signals): void => void primary.stop(signal).then((status) => process.exit(status));
    onStopSignal(stopAndExit);
    primary.started.then(
      (address) => log.info(`serving at ${address} with ${config.workers} workers`),
      (failure: StartFailure) => {
        if (failure.reason !== undefined) console.error(failure.reason);
        stopAndExit('SIGTERM');
      },
    );
    return;
  }
  const { serveProcess } = await import('./serving.js');
  await serveProcess(config, onStopSignal);
}
