import { createWriteStream } from 'node:fs';
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

A backup: \`catalogue restore FILE\` puts every product back with its pk. \`catalogue import FILE\`
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
      const count = await exportProducts(store, format, path === undefined ? process.stdout : createWriteStream(path));
      console.error(`Exported ${count} product${count === 1 ? '' : 's'}${path === undefined ? '' : ` to ${path}`}.`);
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
