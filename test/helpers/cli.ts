import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureBuild } from './build.js';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The `catalogue` command as `npx catalogue` runs it: the build's. */
export const CATALOGUE = fileURLToPath(new URL('../../dist/cli/catalogue.js', import.meta.url));

/** Runs `catalogue COMMAND ARGS` as its own process, with extra environment. */
export function runCli(command: string, args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  ensureBuild();
  return new Promise((resolve) => {
    execFile(process.execPath, [CATALOGUE, command, ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}
