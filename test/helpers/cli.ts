import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one of `src/cli/` as its own process, as `npm run NAME -- ARGS` would, with extra environment. */
export function runCli(name: string, args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  const script = fileURLToPath(new URL(`../../src/cli/${name}.ts`, import.meta.url));
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', script, ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}
