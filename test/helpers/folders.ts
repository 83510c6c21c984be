import { constants, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/**
 * A folder of test `t`'s own, removed after it. A named pipe in it may still have a writer of the test's
 * waiting to open it (a command that was to read it ended or was killed, or the test was cancelled): that
 * open waits on the thread pool for a reader and would keep the test's process alive for ever, so a reader
 * of the folder's own releases it first.
 */
export function testFolder(t: TestContext, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `catalogue-${name}-`));
  t.after(async () => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (lstatSync(path).isFIFO()) await (await open(path, constants.O_RDONLY | constants.O_NONBLOCK)).close();
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}
