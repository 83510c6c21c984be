import { CatalogueNotEmptyError } from '../catalogue/errors.js';
import { bulkProgress, progressBar } from './bulk-progress.js';
import { bulkFileFailure, CommandFailure, EXIT, fileToRead, openConfiguredStore, readArguments, type Command } from './command-line.js';
import { restoreProductFile, type RestoreResult } from './import-products.js';

export const restoreCommand: Command = {
  name: 'restore',
  summary: 'load a backup written by export, every product with its pk',
  help: `Usage: catalogue restore [--replace] [--format csv|json] FILE

Loads FILE, written by \`catalogue export\`, into the catalogue with every product's pk as it was:
links, receipts and tills that name a pk name the same product again. Products created later get
pks after the highest one ever given (the file's included). Every row is checked as import checks
it, and must have a pk, each once (a CSV header names the pk column): all of the file is restored, or
nothing when any row is bad.

Into an empty catalogue only, unless --replace: then the products the catalogue holds are removed
and the file's put in their place, all or nothing (in short steps, as an import writes: a failed or
stopped restore is undone, the products there before put back). From before FILE is checked until
the restore has finished, the running service refuses creates (503): a product created meanwhile
would be removed, or take a pk FILE holds.

The catalogue gets a new identity, which the change feed carries: every till keeping a copy in step
with the feed starts its copy again (docs/API.md, "Keeping a copy in step").

Options:
  --replace        remove the products the catalogue holds and restore FILE in their place
  --format FORMAT  csv or json (default: from FILE's name, .json is JSON, anything else CSV)
  --verbose        also say how long the write lock was held at most
  -h, --help       show this help

Bad rows are listed on standard error as import lists them, then the summary.
Exit status: 0 restored, 1 nothing restored (a bad row, a catalogue that is not empty without
--replace, an unreadable file, a database error), 2 wrong usage.
`,

  async run(args) {
    const parsed = readArguments(args, { replace: { type: 'boolean' }, format: { type: 'string' }, verbose: { type: 'boolean' } });
    if (parsed === 'help') {
      process.stdout.write(this.help);
      return EXIT.done;
    }
    const { path, format, size } = fileToRead(parsed, 'restore');
    const replace = parsed.values['replace'] === true;

    const { store } = await openConfiguredStore();
    const progress = progressBar(size);
    let result: RestoreResult;
    try {
      // Refused before the file is read, which can take a while; the store checks again as it starts.
      const { count } = await store.describeCatalogue();
      if (count > 0 && !replace) throw new CatalogueNotEmptyError(count);
      const onRemoved = (products: number): void => progress.update('removing', products, count);
      result = await restoreProductFile(store, path, { format, replace, onProgress: progress.update, onRemoved, bulk: bulkProgress(parsed.values['verbose'] === true) });
    } catch (error) {
      if (error instanceof CatalogueNotEmptyError) throw new CommandFailure(`${error.message} Pass --replace to put ${path} in their place. Nothing was restored.`);
      throw bulkFileFailure(error, path, 'restore');
    } finally {
      progress.stop();
      await store.close();
    }

    for (const row of result.bad) console.error(`${row.at}: ${row.reason}`);
    if (result.bad.length > 0) {
      throw new CommandFailure(`${result.bad.length} ${result.bad.length === 1 ? 'row is' : 'rows are'} not valid; nothing was restored. A restore takes the whole file: fix them first.`);
    }
    const replaced = replace ? `, in place of the ${result.removed} product${result.removed === 1 ? '' : 's'} there before` : '';
    console.error(`Restored ${result.restored} product${result.restored === 1 ? '' : 's'} from ${path}${replaced}. Tills following the change feed start their copies again.`);
    return EXIT.done;
  },
};
