import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../helpers/build.js';
import { runCommand, type CommandResult } from '../helpers/child-server.js';

const HERE = join(ROOT, 'test/browser');
const BROWSER_TESTS = readdirSync(HERE).filter((name) => name.endsWith('.test.ts') && name !== 'skip.test.ts');
const MISSING = '/nonexistent/chromium';

/**
 * Runs one browser test file in a test runner of its own, as this file runs, without Chromium: compiled
 * beside this one when `npm test` runs it from .test-build/, or its source through tsx.
 */
function runWithoutChromium(file: string, env: Record<string, string>): Promise<CommandResult> {
  const compiled = import.meta.url.endsWith('.js');
  const target = compiled ? join(dirname(fileURLToPath(import.meta.url)), file.replace(/\.ts$/, '.js')) : `test/browser/${file}`;
  const args = [...(compiled ? ['--enable-source-maps'] : ['--import', 'tsx']), '--test', '--test-reporter=tap', target];
  return runCommand({ REQUIRE_BROWSER: undefined, CHROMIUM_PATH: MISSING, ...env }, args, { cwd: ROOT });
}

describe('browser tests without Chromium', () => {
  for (const file of BROWSER_TESTS) {
    it(`${file} is skipped with one line naming the missing browser`, async () => {
      const { code, stdout } = await runWithoutChromium(file, {});
      assert.equal(code, 0, stdout);
      const skips = stdout.split('\n').filter((line) => line.includes('# SKIP'));
      assert.deepEqual(skips.map((line) => line.replace(/^ok \d+ - .* # SKIP /, '')), [`${MISSING} is missing: browser tests skipped (apt-get install chromium)`]);
      assert.match(stdout, /^# fail 0$/m);
    });

    it(`${file} fails when REQUIRE_BROWSER=1`, async () => {
      const { code, stdout } = await runWithoutChromium(file, { REQUIRE_BROWSER: '1' });
      assert.notEqual(code, 0, stdout);
    });
  }
});
