// Bundles the service and the catalogue command, each with its dependencies, over the per-file output
// of tsc: dist/service.js (the settings and the workers' primary), dist/serving.js (the app, loaded only
// by a process that serves) and dist/cli/catalogue.js. What the first two share is in both: a worker
// holding it twice measured no larger (VmRSS 110-112 MB either way, with esbuild's `splitting`). The service's entry,
// dist/server.js, stays apart and small: it takes the stop signals before it loads the service. Loading the hundreds of
// small ES modules of the dependencies one by one cost the service about half of its start (1.07 s of
// CPU to the first answer, 0.58 s bundled), so that `npm start` could not answer within a second.
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { build } from 'esbuild';
import { COPIED_INTO_BUILD } from '../dist/build-freshness.js';

await build({
  entryPoints: ['src/server.ts', 'src/service.ts', 'src/serving.ts', 'src/cli/catalogue.ts'],
  outdir: 'dist',
  outbase: 'src',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  // Left to Node at run time: packages that load a native addon (better-sqlite3, pg's optional
  // pg-native) or read their own files beside their code (the API reference's assets). A package of
  // either kind added later must be listed here too; `test/npm-start.test.ts` runs the bundle.
  //
  // Fastify too, for speed: bundled, it left every answer's `process.nextTick` objects being built by
  // V8's slow path (perf: Runtime_DefineKeyedOwnPropertyInLiteral, MigrateToMap), 6-8 % of a kept
  // answer's CPU against 0.4 % with Fastify loaded by Node, and about 1.5 times the rate of kept
  // answers by hand (docs/PERFORMANCE.md, "The per-request path"). Which of its files does it was not
  // found. Node loading Fastify's own files costs the start about 50 ms.
  //
  // And pino with it: the request log (src/http/observability/request-log.ts) writes to the destination
  // of Fastify's pino, found by pino's own symbols, which a second copy of pino in the bundle would not
  // have.
  //
  // And the service, for its entry (see above); and the serving itself, for the service: the workers'
  // primary, which only starts and stops them, then never loads the app and its dependencies (it held
  // 89 MB of RSS loading them, 55 MB without).
  external: ['better-sqlite3', 'pg-native', '@fastify/swagger-ui', '@fastify/static', 'fastify', 'pino', './service.js', './serving.js'],
  // Dependencies written as CommonJS call require(), which an ES module does not have.
  banner: { js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);" },
});

// The page and the contract are served as written; copied here, the build holds everything the service
// serves, so that a deployment can ship dist/ alone.
for (const [source, copy] of COPIED_INTO_BUILD) {
  mkdirSync(dirname(copy), { recursive: true });
  copyFileSync(source, copy);
}

// The `catalogue` command is package.json's bin, which `npx catalogue` runs as a program: npm marks it
// executable only when it installs, so a build after that (`npm run build`, the benchmark's) must too.
chmodSync('dist/cli/catalogue.js', 0o755);
