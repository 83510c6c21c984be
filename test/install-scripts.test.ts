// Every dependency that ships an install script is decided in package.json's allowScripts (npm 12 runs
// only what is allowed there). The lock file marks such packages; this fails when a new one arrives
// undecided, on any npm, before an install anywhere blocks or runs it unreviewed.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/build.js';

const read = (file: string): Record<string, any> => JSON.parse(readFileSync(join(ROOT, file), 'utf8'));

test('every dependency with an install script is allowed or denied in allowScripts', () => {
  const decided = read('package.json').allowScripts as Record<string, boolean>;
  const withScripts = Object.entries(read('package-lock.json').packages as Record<string, { hasInstallScript?: boolean }>)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(withScripts.length > 0, 'the lock file names the packages that have install scripts');
  const undecided = [...new Set(withScripts)].filter((name) => typeof decided[name] !== 'boolean');
  assert.deepEqual(undecided, [], 'add each to allowScripts (true or false) and to the README install notes');
  assert.equal(decided['@scarf/scarf'], false, 'no install telemetry on a shop server');
});
