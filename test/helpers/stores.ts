import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseLocation } from '../../src/config.js';

/** One database the suite runs against: how to make a fresh, empty one and how to drop it. */
export interface TestStore {
  readonly name: string;
  /** Why this database's runs are skipped here, or `false` when they run. */
  readonly skip: string | false;
  /** A new empty database location, private to the caller. */
  create(): Promise<{ location: DatabaseLocation; drop(): Promise<void> }>;
}

const sqlite: TestStore = {
  name: 'sqlite',
  skip: false,
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-test-'));
    return {
      location: { kind: 'sqlite', path: join(dir, 'catalogue.db') },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/**
 * Every database the HTTP suite loops over, as Kysely's tests loop over dialects.
 */
export const STORES: readonly TestStore[] = [sqlite];
