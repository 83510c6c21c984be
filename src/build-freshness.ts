import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The files the service serves as they are written, copied into the build by `npm run build`: each
 * pair is a source and its copy, relative to the repository's root.
 */
export const COPIED_INTO_BUILD: ReadonlyArray<readonly [source: string, copy: string]> = Object.freeze([
  ['src/web/index.html', 'dist/web/index.html'],
  ['src/web/style.css', 'dist/web/style.css'],
  ['docs/API.md', 'dist/docs/API.md'],
] as const);

/**
 * The first source under `ROOT/src` (or file of `COPIED_INTO_BUILD`) whose compiled output under `ROOT/dist` is missing or older
 * than the source itself, as a path relative to `ROOT`; `undefined` when the build is current, or
 * when there are no sources beside it (a deployment that ships the build alone).
 *
 * A build rewrites every output, so an output older than its source was built before the source's
 * last change.
 */
export function findStaleSource(root: string): string | undefined {
  const sources = join(root, 'src');
  if (!existsSync(sources)) return undefined;
  for (const source of typeScriptFiles(sources)) {
    const output = join(root, 'dist', relative(sources, source).replace(/\.ts$/, '.js'));
    if (isOlder(output, source)) return relative(root, source);
  }
  for (const [source, copy] of COPIED_INTO_BUILD) {
    if (existsSync(join(root, source)) && isOlder(join(root, copy), join(root, source))) return join(...source.split('/'));
  }
  return undefined;
}

function isOlder(output: string, source: string): boolean {
  return !existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs;
}

/**
 * Why the compiled program at `moduleUrl` (a file under `dist/`) must not run, or `undefined` when
 * it may: it was built from the sources beside it as they are now, or it runs from the sources
 * themselves (under `tsx`).
 */
export function staleBuildProblem(moduleUrl: string): string | undefined {
  const path = fileURLToPath(moduleUrl);
  const at = path.lastIndexOf(`${sep}dist${sep}`);
  if (!path.endsWith('.js') || at < 0) return undefined;
  const stale = findStaleSource(path.slice(0, at));
  return stale === undefined ? undefined : `The build in dist/ is older than ${stale}: run \`npm run build\` first (npm ci and npm install build too).`;
}

function* typeScriptFiles(folder: string): Generator<string> {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) yield* typeScriptFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}
