import { statSync } from 'node:fs';
import { SingleBar } from 'cli-progress';
import { DuplicateBarcodeError } from '../catalogue/errors.js';
import { describe, fail, openConfiguredStore, readArguments, readFormat } from './command-line.js';
import { importProductFile } from './import-products.js';
import { UnreadableFileError } from './product-rows.js';

const USAGE = 'Usage: npm run import -- [--skip-invalid] [--format csv|json] FILE';

const args = readArguments({ 'skip-invalid': { type: 'boolean', default: false }, format: { type: 'string' } }, USAGE);
const [path, ...extra] = args.positionals;
if (path === undefined || extra.length > 0) fail(USAGE);
const format = readFormat(args.values.format, path, USAGE);

let size: number;
try {
  size = statSync(path).size;
} catch (error) {
  fail(`Cannot read ${path}: ${describe(error)}`);
}

const { store } = await openConfiguredStore();

// A bar only for a person at a terminal; a log or a pipe gets the summary alone.
const bar = process.stdout.isTTY ? new SingleBar({ format: '{phase} |{bar}| {percentage}%', hideCursor: true }) : undefined;
let phase = '';
let done = 0;

let failure: string | undefined;
try {
  const result = await importProductFile(store, path, {
    format,
    skipInvalid: args.values['skip-invalid'] === true,
    onProgress: (current, bytes) => {
      if (bar === undefined) return;
      if (current !== phase) {
        if (phase !== '') bar.stop();
        phase = current;
        done = 0;
        bar.start(Math.max(size, 1), 0, { phase: current.padEnd(9) });
      }
      done += bytes;
      bar.update(done);
    },
  });
  bar?.stop();
  for (const row of result.bad) console.error(`line ${row.line}: ${row.reason}`);
  if (result.bad.length > 0 && args.values['skip-invalid'] !== true) {
    const count = `${result.bad.length} ${result.bad.length === 1 ? 'row is' : 'rows are'}`;
    failure = `${count} not valid; nothing was imported. Fix them, or pass --skip-invalid to import the valid rows only.`;
  } else {
    const skipped = result.bad.length > 0 ? `; skipped ${result.bad.length} invalid rows` : '';
    console.log(`Imported ${result.imported} product${result.imported === 1 ? '' : 's'} from ${path}${skipped}.`);
  }
} catch (error) {
  bar?.stop();
  if (error instanceof UnreadableFileError) failure = `${path}: ${error.message.replace(/([^.])$/, '$1.')} Nothing was imported.`;
  else if (error instanceof DuplicateBarcodeError) failure = `${error.message} It was added while the import ran; nothing was imported.`;
  else failure = `Import failed; nothing was imported: ${describe(error)}`;
} finally {
  await store.close();
}
if (failure !== undefined) fail(failure);
