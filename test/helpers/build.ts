import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findStaleSource } from '../../src/build-freshness.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Builds `dist/` with `npm run build`, unless the build is already current: what `npm start` and the
 * `catalogue` command run, and the page and contract every server serves, are the build, while most
 * tests run the sources. Checked once a process: the sources do not change while the tests run.
 */
export function ensureBuild(): void {
  if (built) return;
  if (findStaleSource(ROOT) !== undefined) execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  built = true;
}

let built = false;
