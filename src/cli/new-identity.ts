import { errorMessage } from '../error-details.js';
import { CommandFailure, EXIT, openConfiguredStore, readArguments, UsageError, type Command } from './command-line.js';

export const newIdentityCommand: Command = {
  name: 'new-identity',
  summary: 'after putting the database back from a backup: tell tills to start their copies again',
  help: `Usage: catalogue new-identity

Gives the catalogue a new identity, which the change feed carries: every till keeping a copy in
step with the feed sees it change and starts its copy again from version 0.

Run it after restoring the database itself from a backup (a SQLite file put back, pg_restore),
before the service serves it: such a backup brings back the identity and the versions it had, and a
till that had followed the feed past the backup would otherwise go on from changes it holds that
the restore undid. \`catalogue restore\` does this itself. docs/OPERATIONS.md, "Backups", has the
recipes.

Options:
  -h, --help       show this help

Exit status: 0 done, 1 failed, 2 wrong usage.
`,

  async run(args) {
    const parsed = readArguments(args, {});
    if (parsed === 'help') {
      process.stdout.write(this.help);
      return EXIT.done;
    }
    if (parsed.positionals.length > 0) throw new UsageError(`new-identity takes no arguments, got ${parsed.positionals.join(' ')}.`);
    const { store } = await openConfiguredStore();
    try {
      const id = await store.renewCatalogueId();
      console.error(`The catalogue's identity is now ${id}: tills following the change feed start their copies again.`);
      return EXIT.done;
    } catch (error) {
      throw new CommandFailure(`Could not give the catalogue a new identity: ${errorMessage(error)}`);
    } finally {
      await store.close();
    }
  },
};
