import { errorMessage } from '../error-details.js';
import { migrateStore } from '../storage/open-store.js';
import { CommandFailure, EXIT, readArguments, readConfig, UsageError, type Command } from './command-line.js';

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'bring the database schema up to date',
  help: `Usage: catalogue migrate

Brings the schema of the database named by DATABASE_URL up to date, whatever MIGRATE_ON_START says.
Running it again does nothing.

Options:
  -h, --help  show this help (and migrate nothing)

Exit status: 0 the schema is current, 1 failed, 2 wrong usage.
`,

  async run(args) {
    const parsed = readArguments(args, {});
    if (parsed === 'help') {
      process.stdout.write(this.help);
      return EXIT.done;
    }
    if (parsed.positionals.length > 0) throw new UsageError(`migrate takes no arguments, got ${parsed.positionals.join(' ')}.`);
    const config = readConfig();
    let ran: string[];
    try {
      ran = await migrateStore(config.database);
    } catch (error) {
      throw new CommandFailure(`Migration failed: ${errorMessage(error)}`);
    }
    console.error(ran.length === 0 ? 'The database schema is up to date.' : `Applied: ${ran.join(', ')}.`);
    return EXIT.done;
  },
};
