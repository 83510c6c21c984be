// Compiles the tests, and the sources they import, file by file into .test-build/ (the layout of the
// repository, each .ts as a .js beside its source map), which `npm test` then runs with plain Node.
//
// Why not through tsx, as a single test file runs by hand: tsx compiles with esbuild too, but in every
// test process again, behind loader hooks that Node 20 runs on a thread of their own, one round trip per
// module. Importing the app so cost about 1.2 s of CPU against 0.55 s compiled, and a file of a few
// HTTP tests 3.8 s of CPU against 1.7 s: with some ninety test files, each a process of its own, that
// was minutes of a two-core machine before a single test ran.
//
// The tests find the repository's files from ROOT (test/helpers/build.ts), which follows the link to
// package.json below back to the repository, so that they run the same from either tree; the sources
// find the build from their own place (src/http/contract/build-output.ts), hence the link to dist/.
import { readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, '.test-build');

function* typeScriptFiles(folder) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) yield* typeScriptFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield relative(root, path);
  }
}

// Anew each time, so that no test deleted from test/ lingers compiled.
rmSync(out, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src', 'test', 'bench', 'examples'].flatMap((folder) => [...typeScriptFiles(join(root, folder))]),
  outdir: out,
  outbase: '.',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
for (const name of ['dist', 'package.json']) symlinkSync(join('..', name), join(out, name));
