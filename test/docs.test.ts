import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/config.js';
import { ROOT } from './helpers/build.js';

const read = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8');
const DOCUMENTS = [
  'README.md',
  ...readdirSync(resolve(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`),
  'examples/till/README.md',
];

/** Every environment variable the service's settings are read from, as loadConfig reads them. */
function settingNames(): string[] {
  const names = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get: (_target, name) => {
      if (typeof name === 'string') names.add(name);
      return undefined;
    },
  });
  loadConfig(env);
  return [...names].sort();
}

/** The names in the first column of the Markdown table that follows `heading`. */
function tableNames(markdown: string, heading: string): string[] {
  const section = markdown.split(heading)[1];
  assert.ok(section !== undefined, `no section ${heading}`);
  const table = section.split('\n\n').find((block) => block.startsWith('| setting'));
  assert.ok(table !== undefined, `no settings table after ${heading}`);
  return table
    .split('\n')
    .slice(2)
    .map((row) => /^\| `([A-Z_]+)` \|/.exec(row)?.[1] ?? `unreadable row: ${row}`);
}

describe('the docs', () => {
  it("list every setting in the README's table, and page-number's fixed page size", () => {
    const readme = read('README.md');
    assert.deepEqual(tableNames(readme, '## Settings').sort(), settingNames());
    assert.match(readme, /\| `PAGINATION` \|[^\n]*`page-number` \(10 products a page, fixed/);
  });

  it('name only real settings in the contract, page-number size included', () => {
    const contract = read('docs/API.md');
    const settings = settingNames();
    for (const name of tableNames(contract, '## Running it')) assert.ok(settings.includes(name), name);
    assert.match(contract, /\| `PAGINATION` \|[^\n]*`page-number` \(10 products a page, fixed\)/);
  });

  it('link only to files inside the repository, all of which exist', () => {
    for (const document of DOCUMENTS) {
      const text = read(document);
      assert.doesNotMatch(text, /\.\.\/shared|\/work\//, document);
      for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target) || target.startsWith('#') || target.startsWith('/')) continue;
        const file = resolve(ROOT, dirname(document), target.split('#')[0]!);
        assert.ok(!relative(ROOT, file).startsWith('..'), `${document} links outside the repository: ${target}`);
        assert.ok(existsSync(file), `${document} links to a missing file: ${target}`);
      }
    }
  });
});
