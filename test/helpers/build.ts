import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findStaleSource } from '../../src/build-freshness.js';
import { runCommand } from './child-server.js';

/**
 * The repository's root, whether the tests run from their sources (tsx) or compiled into .test-build/
 * (`npm test`, scripts/compile-tests.mjs), whose package.json is a link to the repository's.
 */
export const ROOT = `${dirname(realpathSync(fileURLToPath(new URL('../../package.json', import.meta.url))))}/`;

/** A build on a busy machine: compiling and bundling take most of a minute there. */
const BUILD_LIMIT_MS = 300_000;

/**
 * Builds `dist/` with `npm run build`, unless the build is already current: what `npm start`, the
 * `catalogue` command and every service process a test starts run, and the page and contract every
 * server serves, are the build, while the tests that build the app in their own process run the
 * sources. Checked once a process: the sources do not change while the tests run (`npm test` builds
 * first, so that test files run side by side do not build at once).
 */
export function ensureBuild(): Promise<void> {
  building ??= (async () => {
    if (findStaleSource(ROOT) === undefined) return;
    const build = await runCommand({}, ['run', '--silent', 'build'], { command: 'npm', cwd: ROOT, timeoutMs: BUILD_LIMIT_MS });
    if (build.code !== 0) throw new Error(`npm run build failed (exit status ${build.code}):\n${build.stdout}${build.stderr}`);
  })();
  return building;
}

let building: Promise<void> | undefined;
