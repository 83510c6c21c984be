import { bulkProgress, bulkWait, progressBar, waitedFor } from './bulk-progress.js';
import { bulkFileFailure, CommandFailure, EXIT, fileToRead, openConfiguredStore, readArguments, readWaitSeconds, type Command } from './command-line.js';
import { importProductFile, type ImportResult } from './import-products.js';

export const importCommand: Command = {
  name: 'import',
  summary: 'add products from a CSV or JSON file, or update names and prices (--update)',
  help: `Usage: catalogue import [--update] [--skip-invalid] [--wait[=SECONDS]] [--format csv|json] FILE

Adds the products of FILE to the catalogue, each checked with the API's rules: all of them, or
none when any row is bad. FILE is CSV with a name,barcode,price header (fields separated by commas,
or by semicolons when the header is), or a JSON array of {"name", "barcode", "price"} objects. A pk
column or field (an export has one) is ignored: the products get new pks (restore keeps them).

The rows are written in short steps, so that the running service goes on creating products
meanwhile (they appear step by step); should the import fail or be stopped half-way, even killed,
what it wrote is undone (a killed import by the next import, or by a running service).

Options:
  --update         apply a price list: a product whose barcode is already in the catalogue takes
                   FILE's name and price (its pk stays), the others are added
  --skip-invalid   import the valid rows and list the bad ones, instead of importing nothing
  --wait[=SECONDS] when another bulk write (import, price list, removal) is under way, wait for it
                   to finish, then run; at most SECONDS (up to 86400) when given. Without it, the
                   import stops at once, importing nothing
  --format FORMAT  csv or json (default: from FILE's name, .json is JSON, anything else CSV)
  --verbose        also say how long the write lock was held at most
  -h, --help       show this help

Bad rows are listed on standard error as "line N: field: reason" (for JSON "line N, item K: ...",
K the item's place in the array), then the summary. Each JSON item is judged on its own.
Exit status: 0 imported (bad rows skipped with --skip-invalid), 1 nothing imported (a bad row,
an unreadable file, another bulk write under way, or still under way after --wait=SECONDS, a
database error), 2 wrong usage.
`,

  async run(args) {
    const parsed = readArguments(args, { update: { type: 'boolean' }, 'skip-invalid': { type: 'boolean' }, wait: { type: 'optional' }, format: { type: 'string' }, verbose: { type: 'boolean' } });
    if (parsed === 'help') {
      process.stdout.write(this.help);
      return EXIT.done;
    }
    // Every usage error before the file is looked at.
    const waitSeconds = readWaitSeconds(parsed.values['wait']);
    const { path, format, size } = fileToRead(parsed, 'import');
    const skipInvalid = parsed.values['skip-invalid'] === true;
    const update = parsed.values['update'] === true;

    const { store } = await openConfiguredStore();
    const waiting = waitSeconds === undefined ? undefined : bulkWait(waitSeconds);
    const progress = progressBar(size);
    let result: ImportResult;
    try {
      // Before the file is checked: the bulk write under way may add or change the products it lists.
      if (waiting !== undefined) await store.waitForBulkWrite(waiting.wait);
      waiting?.stop();
      result = await importProductFile(store, path, { format, skipInvalid, update, onProgress: progress.update, bulk: { ...bulkProgress(parsed.values['verbose'] === true), wait: waiting?.wait } });
    } catch (error) {
      throw bulkFileFailure(error, path, 'import', waitedFor(waitSeconds));
    } finally {
      waiting?.stop();
      progress.stop();
      await store.close();
    }

    for (const row of result.bad) console.error(`${row.at}: ${row.reason}`);
    if (result.bad.length > 0 && !skipInvalid) {
      // A file imported again (a price list, a backup): --skip-invalid would import nothing of it.
      const inCatalogue = result.bad.filter((row) => row.inCatalogue === true).length;
      if (inCatalogue === result.bad.length) {
        const rows = inCatalogue === 1 ? 'The row names a product' : `All ${inCatalogue} rows name products`;
        throw new CommandFailure(`${rows} already in the catalogue (by barcode); nothing was imported. Pass --update to take their names and prices from the file.`);
      }
      const count = `${result.bad.length} ${result.bad.length === 1 ? 'row is' : 'rows are'}`;
      const update = inCatalogue > 0 ? ` (${inCatalogue} only for being in the catalogue already: --update takes the file's names and prices for those)` : '';
      throw new CommandFailure(`${count} not valid${update}; nothing was imported. Fix them, or pass --skip-invalid to import the valid rows only.`);
    }
    const skipped = result.bad.length > 0 ? `; skipped ${result.bad.length} invalid row${result.bad.length === 1 ? '' : 's'}` : '';
    console.error(
      update
        ? `Updated the catalogue from ${path}: ${result.added} added, ${result.changed} changed, ${result.unchanged} unchanged${skipped}.`
        : `Imported ${result.added} product${result.added === 1 ? '' : 's'} from ${path}${skipped}.`,
    );
    return EXIT.done;
  },
};
