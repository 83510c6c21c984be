import { createWriteStream } from 'node:fs';
import { namedPks } from '../catalogue/named-pks.js';
import { errorMessage } from '../error-details.js';
import { CommandFailure, EXIT, isBrokenPipe, openConfiguredStore, readArguments, readFormat, UsageError, type Command } from './command-line.js';
import { exportProducts } from './export-products.js';

export const exportCommand: Command = {
  name: 'export',
  summary: 'write the whole catalogue as CSV or JSON',
  help: `Usage: catalogue export [--format csv|json] [FILE]

Writes every product with its pk, in pk order, in the format import and restore read: CSV with a
pk,name,barcode,price header, or a JSON array. Prices are exact, with two decimals. Without FILE the
data goes to standard output, alone: the summary and any message go to standard error.

A backup: \`catalogue restore FILE\` puts every product back with its pk. Every product is written as
stored; one whose name or barcode the API would not take (plain SQL can write such values) is named
in a warning, as the restore would refuse it until it is corrected. \`catalogue import FILE\`
ignores the pks and adds the products with new ones (into another catalogue, say).

CSV is made safe to open in a spreadsheet: a name beginning with =, +, -, @, a tab or a carriage
return (which a spreadsheet would run as a formula) is written with a ' before it, and a name with a
semicolon is quoted. Import and restore drop that ', so an exported file reads back exactly.

Options:
  --format FORMAT  csv or json (default: from FILE's name, .json is JSON, anything else CSV)
  -h, --help       show this help

Exit status: 0 exported (also when a reader such as \`head\` stops reading early), 1 failed, 2 wrong usage.
`,

  async run(args) {
    const parsed = readArguments(args, { format: { type: 'string' } });
    if (parsed === 'help') {
      process.stdout.write(this.help);
      return EXIT.done;
    }
    const [path, ...extra] = parsed.positionals;
    if (extra.length > 0) throw new UsageError(`Expected at most one FILE, got ${parsed.positionals.length}.`);
    const format = readFormat(parsed.values['format'], path);

    const { store } = await openConfiguredStore();
    try {
      const { written, unrestorable } = await exportProducts(store, format, path === undefined ? process.stdout : createWriteStream(path));
      console.error(`Exported ${written} product${written === 1 ? '' : 's'}${path === undefined ? '' : ` to ${path}`}.`);
      if (unrestorable.count > 0) {
        const them = unrestorable.count === 1 ? 'One of them does' : `${unrestorable.count.toLocaleString('en')} of them do`;
        console.error(
          `Warning: ${them} not restore as written (${namedPks(unrestorable.pks, unrestorable.count)}): plain SQL wrote a name or barcode that the API does not take, which catalogue restore refuses (or, for spaces around a name, trims). Correct them in the catalogue and export again, or in the file before restoring it.`,
        );
      }
      return EXIT.done;
    } catch (error) {
      // The reader took what it wanted; there is nobody left to tell.
      if (path === undefined && isBrokenPipe(error)) return EXIT.done;
      throw new CommandFailure(`Export failed: ${errorMessage(error)}`);
    } finally {
      await store.close();
    }
  },
};
