import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openStore } from '../src/storage/open-store.js';
import { runServiceUntilExit, type RunAs } from './helpers/child-server.js';

/** Root may write any file; the service is run as an ordinary account then, as in production. */
const ORDINARY_USER: RunAs | undefined = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;

describe('start-up refuses a SQLite database it cannot use', () => {
  it('refuses a read-only database file in a writable folder with one line and exit status 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-readonly-'));
    try {
      const path = join(dir, 'catalogue.db');
      await (await openStore({ kind: 'sqlite', path })).close();
      chmodSync(dir, 0o777);
      chmodSync(path, 0o444);
      const exit = await runServiceUntilExit({ DATABASE_URL: `sqlite:${path}`, PORT: '0' }, 60_000, ORDINARY_USER);
      assert.equal(exit.code, 1, exit.stdout);
      assert.equal(exit.stderr, `Cannot open the database sqlite:${path}: the file is read-only for this user; the service writes to it.\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ends at once with one line for a path that cannot hold a database', async () => {
    const exit = await runServiceUntilExit({ DATABASE_URL: 'sqlite:/proc/x/y.db', PORT: '0' }, 60_000);
    // Within the run's limit (20 s): it does not try again and again.
    assert.equal(exit.code, 1);
    assert.match(exit.stderr, /^Cannot open the database sqlite:\/proc\/x\/y\.db: [^\n]+\n$/);
  });
});
