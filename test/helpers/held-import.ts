import assert from 'node:assert/strict';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { DatabaseLocation } from '../../src/config.js';
import { runCommand, type Child, type ChildExit } from './child-server.js';
import { startCli } from './cli.js';
import { testFolder } from './folders.js';
import { outsideSql } from './outside-sql.js';
import { passesWithin } from './passes-within.js';
import { uniqueBarcode } from './products.js';

/** Rows of a held import: its first step of 1,000 is written, the rest wait in the file. */
export const HELD_ROWS = 1_500;
export const FIRST_STEP = 1_000;

/** An import held mid-way, its bulk write under way and its first step written. */
export interface HeldImport {
  readonly child: Child;
  /** The bulk write under way as the others name it: its owner, and when it started. */
  readonly owner: string;
  readonly startedAt: string;
  /** The barcodes of its rows, in the file's order. */
  readonly barcodes: readonly string[];
  /** Hands the import the rest of its rows; resolves with how it ended. */
  finish(): Promise<ChildExit>;
}

export interface HeldImportOptions {
  /** The `catalogue` command's environment: the database it imports into. */
  readonly env: Record<string, string>;
  readonly location: DatabaseLocation;
  /** The catalogue's count as the test reads it (a store, or the service), to see the first step land. */
  readonly count: () => Promise<number>;
}

/**
 * Starts `catalogue import` of a named pipe and holds it mid-way, as a long import of a big file is:
 * it reads and checks every row, starts its bulk write, writes its first step of 1,000 rows, and then
 * waits for the rest of the file, which the test hands it only on `finish()`. What happens meanwhile
 * (a create, a read, another bulk write, a kill) happens while the import is under way, on any machine.
 */
export async function startHeldImport(t: TestContext, { env, location, count }: HeldImportOptions): Promise<HeldImport> {
  // An import that ends early leaves the pipe without a reader, and an open to write to it waiting for
  // one: the folder releases it before it goes.
  const dir = testFolder(t, 'held-import');
  const file = join(dir, 'held.csv');
  assert.equal((await runCommand({}, [file], { command: 'mkfifo' })).code, 0);
  const barcodes = Array.from({ length: HELD_ROWS }, () => uniqueBarcode());
  const rows = barcodes.map((barcode, i) => `Held ${i},${barcode},1.00\n`);
  const before = await count();
  const child = await startCli('import', [file], env);
  t.after(() => child.process.kill('SIGKILL'));
  const unlessEnded = <T>(step: Promise<T>): Promise<T> =>
    Promise.race([step, child.exited.then(({ code, signal }) => assert.fail(`the import ended (${signal ?? code}) before it was held: ${child.stderr()}`))]);
  // The check reads the whole pipe; then the import opens the file again to write its rows. Another pipe
  // takes the first's place before the check reaches its end, so that the writing pass opens the second
  // (a writer opened before the check has closed its end would feed the check instead).
  const checking = await unlessEnded(open(file, 'w'));
  await checking.write(`name,barcode,price\n${rows.join('')}`);
  const second = join(dir, 'second.csv');
  assert.equal((await runCommand({}, [second], { command: 'mkfifo' })).code, 0);
  await rename(second, file);
  await checking.close();
  let running: { owner: string; started_at: number | string } | undefined;
  await passesWithin(30_000, async () => {
    [running] = await outsideSql<{ owner: string; started_at: number | string }>(location, 'SELECT owner, started_at FROM bulk_write');
    assert.ok(running !== undefined, 'the import has started its bulk write');
  }, 20);
  const pipe = await unlessEnded(open(file, 'w'));
  t.after(() => pipe.close());
  await pipe.write(`name,barcode,price\n${rows.slice(0, FIRST_STEP + 1).join('')}`);
  await passesWithin(30_000, async () => assert.equal(await count(), before + FIRST_STEP), 20);
  return {
    child,
    owner: running!.owner,
    startedAt: new Date(Number(running!.started_at)).toISOString(),
    barcodes,
    finish: async () => {
      await pipe.write(rows.slice(FIRST_STEP + 1).join(''));
      await pipe.close();
      return child.exited;
    },
  };
}
