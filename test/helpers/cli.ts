import { fileURLToPath } from 'node:url';
import { ensureBuild } from './build.js';
import { runCommand, spawnChild, type Child, type CommandResult } from './child-server.js';

/** The `catalogue` command as `npx catalogue` runs it: the build's. */
export const CATALOGUE = fileURLToPath(new URL('../../dist/cli/catalogue.js', import.meta.url));

/** Runs `catalogue COMMAND ARGS` as its own process, with extra environment. */
export async function runCli(command: string, args: readonly string[], env: Record<string, string>): Promise<CommandResult> {
  await ensureBuild();
  return runCommand(env, [CATALOGUE, command, ...args]);
}

/** Starts `catalogue COMMAND ARGS` as its own process without waiting for it, for a test to stop or kill. */
export async function startCli(command: string, args: readonly string[], env: Record<string, string>): Promise<Child> {
  await ensureBuild();
  return spawnChild(env, [CATALOGUE, command, ...args]);
}

/**
 * A CSV file of products (`name,barcode,price`, one line a product) as `catalogue export` writes the
 * same products when their pks are `first`, `first + 1`, ...: each line with its pk first.
 */
export function withPks(csv: string, first = 1): string {
  return csv
    .split('\n')
    .map((line, i) => (line === '' ? line : `${i === 0 ? 'pk' : first + i - 1},${line}`))
    .join('\n');
}
