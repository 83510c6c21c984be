import { createWriteStream } from 'node:fs';
import { describe, fail, openConfiguredStore, readArguments, readFormat } from './command-line.js';
import { exportProducts } from './export-products.js';

const USAGE = 'Usage: npm run export -- [--format csv|json] [FILE]   (without FILE: standard output)';

const args = readArguments({ format: { type: 'string' } }, USAGE);
const [path, ...extra] = args.positionals;
if (extra.length > 0) fail(USAGE);
const format = readFormat(args.values.format, path, USAGE);

const { store } = await openConfiguredStore();

let failure: string | undefined;
try {
  const count = await exportProducts(store, format, path === undefined ? process.stdout : createWriteStream(path));
  // The summary goes to standard error, so that standard output holds the data alone.
  console.error(`Exported ${count} product${count === 1 ? '' : 's'}${path === undefined ? '' : ` to ${path}`}.`);
} catch (error) {
  failure = `Export failed: ${describe(error)}`;
} finally {
  await store.close();
}
if (failure !== undefined) fail(failure);
