#!/usr/bin/env node
import { staleBuildProblem } from '../build-freshness.js';
import { CommandFailure, EXIT, isBrokenPipe, UsageError, type Command } from './command-line.js';
import { exportCommand } from './export.js';
import { importCommand } from './import.js';
import { migrateCommand } from './migrate.js';
import { newIdentityCommand } from './new-identity.js';
import { removeCommand } from './remove.js';
import { restoreCommand } from './restore.js';
import { hideSqliteExperimentalWarning } from './node-warnings.js';

const COMMANDS: readonly Command[] = [importCommand, removeCommand, exportCommand, restoreCommand, newIdentityCommand, migrateCommand];

const HELP = `Usage: catalogue <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(12)} ${command.summary}`).join('\n')}

Run \`catalogue <command> --help\` for a command's options. Every command reads the service's
settings from the environment (DATABASE_URL, MIGRATE_ON_START, ...). Data goes to standard output,
every message to standard error.

One bulk write (import, price list, removal) runs at a time: import and remove stop at once while
another is under way, or with --wait[=SECONDS] wait for it to finish (at most SECONDS), then run.

Exit status: 0 done, 1 failed (another bulk write under way included), 2 wrong usage.
`;

const SEE_HELP = 'Run `catalogue --help` for the commands.';

async function main(args: readonly string[]): Promise<number> {
  hideSqliteExperimentalWarning();
  const [name, ...rest] = args;
  if (name === '--help' || name === '-h') {
    process.stdout.write(HELP);
    return EXIT.done;
  }
  const command = COMMANDS.find((candidate) => candidate.name === (name === 'help' ? rest[0] : name));
  if (name === 'help') {
    process.stdout.write(command?.help ?? HELP);
    return EXIT.done;
  }
  // No command is a wrong command line like a wrong command: a script that forgot it must not pass.
  const commands = COMMANDS.map((c) => c.name).join(', ');
  if (name === undefined) throw new UsageError(`Name a command: ${commands}.\n${SEE_HELP}`);
  if (command === undefined) throw new UsageError(`Unknown command ${JSON.stringify(name)}; the commands are ${commands}.\n${SEE_HELP}`);
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`${error.message}\nRun \`catalogue ${command.name} --help\` for its usage.`);
    throw error;
  }
}

// A reader that stops early (`catalogue export | head`) is no failure of ours, and not worth a word.
process.stdout.on('error', (error) => {
  if (!isBrokenPipe(error)) throw error;
});

const stale = staleBuildProblem(import.meta.url);
if (stale !== undefined) {
  console.error(stale);
  process.exitCode = EXIT.failed;
} else {
  try {
    process.exitCode = await main(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(error.message);
      process.exitCode = EXIT.usage;
    } else if (error instanceof CommandFailure) {
      console.error(error.message);
      process.exitCode = EXIT.failed;
    } else {
      throw error;
    }
  }
}
