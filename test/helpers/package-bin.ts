import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { runCommand, type CommandResult } from './child-server.js';

const require = createRequire(import.meta.url);

/**
 * Runs a command an installed package ships (its `bin`) with this Node.js, as `npx` would but
 * without ever reaching for the registry. Resolves with the exit code instead of throwing on one.
 */
export function runPackageBin(pkg: string, bin: string, args: readonly string[], env: Record<string, string> = {}): Promise<CommandResult> {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: string | Record<string, string> };
  const script = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (script === undefined) throw new Error(`${pkg} has no command ${bin}.`);
  return runCommand(env, [join(dirname(manifestPath), script), ...args]);
}
