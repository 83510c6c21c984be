import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './helpers/build.js';


interface PackageJson {
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
}

/** Every TypeScript file under `folder`, recursively. */
function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The packages a file loads at run time: imports other than `import type`, and `require` calls. */
function runtimePackages(text: string): string[] {
  const specifiers = [
    ...text.matchAll(/^\s*import\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm),
    ...text.matchAll(/^\s*export\s+(?!type\s)[^'";]*?\sfrom\s+'([^']+)'/gm),
    ...text.matchAll(/\b(?:require|import)\(\s*'([^']+)'\s*\)/g),
  ].map((match) => match[1]!);
  return specifiers
    .filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:') && !builtinModules.includes(specifier))
    .map((specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/'));
}

describe('package.json', () => {
  it('declares every package the service loads at run time as a dependency, not a development one', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {})]);
    const undeclared = sources(join(ROOT, 'src')).flatMap((file) =>
      runtimePackages(readFileSync(file, 'utf8'))
        .filter((name) => !declared.has(name))
        .map((name) => `${name} (${file.slice(ROOT.length + 1)})`),
    );
    assert.deepEqual(undeclared, []);
  });
});
