import { ConfigError, loadConfig } from '../config.js';
import { migrateStore } from '../storage/open-store.js';

try {
  const config = loadConfig(process.env);
  const ran = await migrateStore(config.database);
  console.log(ran.length === 0 ? 'The database schema is up to date.' : `Applied: ${ran.join(', ')}`);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : `Migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
