import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findStaleSource } from '../../src/build-freshness.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Builds `dist/` with `npm run build`, unless the build is already current: what `npm start`, the
 * `catalogue` command and the page's script run is the build, while most tests run the sources.
 */
export function ensureBuild(): void {
  if (findStaleSource(ROOT) === undefined) return;
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
}
