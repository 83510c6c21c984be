// Exits 0 when dist/ was built from the sources, dependencies and build settings as they are now, and 1
// otherwise, so that `prepare` builds only then. npm runs `prepare` after every install, and npm 10 (the
// npm of Node 22) runs it again on every `npx catalogue ...`, as it installs the project into its own
// folder first: without this, each such command compiled and bundled the whole service anew (about 15 s
// of CPU) before it started.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** What the build reads besides the sources that dist/build-freshness.js follows. */
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.mjs'];

try {
  const { findStaleSource } = await import('../dist/build-freshness.js');
  // The bundle is written last, by scripts/bundle.mjs after the compiler.
  const built = statSync(join(root, 'dist/service.js')).mtimeMs;
  const newer = (input) => existsSync(join(root, input)) && statSync(join(root, input)).mtimeMs > built;
  process.exit(findStaleSource(root) === undefined && !BUILD_INPUTS.some(newer) ? 0 : 1);
} catch {
  // No build yet, or one too old to tell: build.
  process.exit(1);
}
