import { createWriteStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { openStore } from '../storage/open-store.js';
import { exportProducts } from './export-products.js';
import { formatOfPath } from './product-rows.js';

const USAGE = 'Usage: npm run export -- [--format csv|json] [FILE]   (without FILE: standard output)';

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

let args;
try {
  args = parseArgs({ allowPositionals: true, options: { format: { type: 'string' } } });
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
}
const [path, ...extra] = args.positionals;
if (extra.length > 0) fail(USAGE);
const format = args.values.format ?? (path === undefined ? 'csv' : formatOfPath(path));
if (format !== 'csv' && format !== 'json') fail(`--format must be csv or json.\n${USAGE}`);

let config;
try {
  config = loadConfig(process.env);
} catch (error) {
  fail(error instanceof ConfigError ? error.message : String(error));
}
const store = await openStore(config.database, { poolMax: config.dbPoolMax }).catch((error: unknown) =>
  fail(`Cannot open the database: ${error instanceof Error ? error.message : String(error)}`),
);

let failure: string | undefined;
try {
  const count = await exportProducts(store, format, path === undefined ? process.stdout : createWriteStream(path));
  // The summary goes to standard error, so that standard output holds the data alone.
  console.error(`Exported ${count} product${count === 1 ? '' : 's'}${path === undefined ? '' : ` to ${path}`}.`);
} catch (error) {
  failure = `Export failed: ${error instanceof Error ? error.message : String(error)}`;
} finally {
  await store.close();
}
if (failure !== undefined) fail(failure);
