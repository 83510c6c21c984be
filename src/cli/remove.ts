import { BulkWriteRunningError, UndoCutShortError, UnknownBarcodesError } from '../catalogue/errors.js';
import { errorMessage } from '../error-details.js';
import type { CatalogueStore } from '../storage/store.js';
import { barcodeArguments, readBarcodeFile, type ListedBarcode } from './barcode-list.js';
import { bulkProgress, bulkWait, StoppedBySignal, tellAbandonedUndone, waitedFor } from './bulk-progress.js';
import { CommandFailure, EXIT, openConfiguredStore, readArguments, readWaitSeconds, UsageError, type Command } from './command-line.js';
import { UnreadableFileError } from './unreadable-file.js';

/** Barcodes checked against the catalogue, and removed, at a time. */
const BATCH = 1_000;

export const removeCommand: Command = {
  name: 'remove',
  summary: 'remove products by barcode, from arguments or a file',
  help: `Usage: catalogue remove [--wait[=SECONDS]] BARCODE...
       catalogue remove [--wait[=SECONDS]] --file FILE

Removes the products with these barcodes: all of them, or none when any barcode is not a valid
EAN-13 (or 12-digit UPC-A) or no product has it; those are listed by where they were given. FILE is
a CSV file whose header names a barcode column (an export will do), or one barcode per line.

A removed product is gone from every listing and count, its detail answers 404, its pk is never used
again, and its barcode is free for a new product. Tills that follow the change feed hear of each
removal. The products are removed in short steps; should the command fail or be stopped half-way,
what it removed is put back.

Options:
  --file FILE       read the barcodes from FILE instead of the arguments
  --wait[=SECONDS]  when another bulk write (import, price list, removal) is under way, wait for it
                    to finish, then run; at most SECONDS (up to 86400) when given. Without it, the
                    removal stops at once, removing nothing
  --verbose         also say how long the write lock was held at most
  -h, --help        show this help

Exit status: 0 removed, 1 nothing removed (a bad or unknown barcode, an unreadable file, another
bulk write under way, or still under way after --wait=SECONDS, a database error), 2 wrong usage.
`,

  async run(args) {
    const parsed = readArguments(args, { file: { type: 'string' }, wait: { type: 'optional' }, verbose: { type: 'boolean' } });
    if (parsed === 'help') {
      process.stdout.write(this.help);
      return EXIT.done;
    }
    const file = parsed.values['file'];
    if (typeof file === 'string' && parsed.positionals.length > 0) throw new UsageError('Give the barcodes as arguments or in --file FILE, not both.');
    if (file === undefined && parsed.positionals.length === 0) throw new UsageError('Name the barcodes to remove, or --file FILE.');
    const list = (): AsyncIterable<ListedBarcode> | Iterable<ListedBarcode> => (typeof file === 'string' ? readBarcodeFile(file) : barcodeArguments(parsed.positionals));
    const waitSeconds = readWaitSeconds(parsed.values['wait']);

    const { store } = await openConfiguredStore();
    const waiting = waitSeconds === undefined ? undefined : bulkWait(waitSeconds);
    try {
      // Before the barcodes are checked: the bulk write under way may add or remove the products they name.
      if (waiting !== undefined) await store.waitForBulkWrite(waiting.wait, tellAbandonedUndone);
      waiting?.stop();
      const barcodes = await checkedBarcodes(store, list());
      const removed = await store.removeProducts(inBatches([...barcodes]), { ...bulkProgress(parsed.values['verbose'] === true), wait: waiting?.wait });
      console.error(`Removed ${removed} product${removed === 1 ? '' : 's'}.`);
      return EXIT.done;
    } catch (error) {
      if (error instanceof CommandFailure) throw error;
      if (error instanceof UndoCutShortError) throw new CommandFailure(`Removal failed: ${error.message}`);
      if (error instanceof StoppedBySignal) throw new CommandFailure(`${error.message}; what was written is undone: nothing was removed.`);
      if (error instanceof UnreadableFileError) throw new CommandFailure(`${String(file)}: ${error.message.replace(/([^.])$/, '$1.')} Nothing was removed.`);
      if (error instanceof UnknownBarcodesError) throw new CommandFailure(`${error.message} They were removed by another writer meanwhile; nothing was removed.`);
      if (error instanceof BulkWriteRunningError) throw new CommandFailure(`${error.message}${waitedFor(waitSeconds)} Nothing was removed.`);
      throw new CommandFailure(`Removal failed; nothing was removed: ${errorMessage(error)}`);
    } finally {
      waiting?.stop();
      await store.close();
    }
  },
};

/**
 * The barcodes of the list, each once, after checking every one: a bad barcode or one no product
 * has is listed on standard error by where it was given, and then nothing is removed.
 *
 * @throws CommandFailure when any was bad or unknown.
 */
async function checkedBarcodes(store: CatalogueStore, list: AsyncIterable<ListedBarcode> | Iterable<ListedBarcode>): Promise<Set<string>> {
  const barcodes = new Set<string>();
  const problems: Array<{ index: number; text: string }> = [];
  let pending: Array<ListedBarcode & { barcode: string }> = [];
  const checkPending = async (): Promise<void> => {
    const known = await store.existingBarcodes(pending.map((item) => item.barcode));
    for (const item of pending) if (!known.has(item.barcode)) problems.push({ index: item.index, text: `${item.at}: no product has barcode ${item.barcode}.` });
    pending = [];
  };
  for await (const item of list) {
    if ('problem' in item) problems.push({ index: item.index, text: `${item.at}: ${item.problem}` });
    else if (!barcodes.has(item.barcode)) {
      barcodes.add(item.barcode);
      pending.push(item);
      if (pending.length >= BATCH) await checkPending();
    }
  }
  await checkPending();
  if (problems.length > 0) {
    for (const problem of problems.sort((a, b) => a.index - b.index)) console.error(problem.text);
    const count = `${problems.length} ${problems.length === 1 ? 'barcode is' : 'barcodes are'}`;
    throw new CommandFailure(`${count} not valid or not in the catalogue; nothing was removed.`);
  }
  if (barcodes.size === 0) throw new CommandFailure('The list holds no barcode; nothing was removed.');
  return barcodes;
}

async function* inBatches(barcodes: readonly string[]): AsyncGenerator<string[]> {
  for (let start = 0; start < barcodes.length; start += BATCH) yield barcodes.slice(start, start + BATCH);
}
