import { buildApp } from './app.js';
import { ConfigError, loadConfig, redactPassword, startupWarnings } from './config.js';
import { loggerOptions } from './http/logging.js';
import { openStore } from './storage/open-store.js';

/** How long in-flight requests may take to finish after a stop signal. */
const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
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

  const where = config.database.kind === 'sqlite' ? `sqlite:${config.database.path}` : redactPassword(config.database.url);
  let store;
  try {
    store = await openStore(config.database, { poolMax: config.dbPoolMax });
  } catch (error) {
    console.error(`Cannot open the database ${where}: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }

  const app = await buildApp({ config, store, logger: loggerOptions(config.logLevel) });
  await app.listen({ port: config.port, host: config.host });
  app.log.info(`catalogue on ${where}, ${config.pagination} pagination`);
  for (const warning of startupWarnings(config)) app.log.warn(warning);

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal} received; finishing requests in flight`);
    const timer = setTimeout(() => {
      app.log.error('requests did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    timer.unref();
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

await main();
