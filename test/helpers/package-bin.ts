import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export interface BinRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command an installed package ships (its `bin`) with this Node.js, as `npx` would but
 * without ever reaching for the registry. Resolves with the exit code instead of throwing on one.
 */
export function runPackageBin(pkg: string, bin: string, args: readonly string[], env: Record<string, string> = {}): Promise<BinRun> {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: string | Record<string, string> };
  const script = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (script === undefined) throw new Error(`${pkg} has no command ${bin}.`);
  // The test runner marks its own child processes; these are not its tests.
  const { NODE_TEST_CONTEXT: _runner, ...inherited } = process.env;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(dirname(manifestPath), script), ...args],
      { env: { ...inherited, ...env }, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') return reject(error);
        resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
      },
    );
  });
}
