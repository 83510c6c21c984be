import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createWriteStream, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import { databaseUrl } from '../helpers/child-server.js';
import { runCli, startCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { testFolder } from '../helpers/folders.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { passesWithin } from '../helpers/passes-within.js';
import { uniqueBarcode } from '../helpers/products.js';

function folder(t: TestContext): string {
  return testFolder(t, 'restore');
}

// A bound for a hang, not for speed: beside CI's other lanes, two busy loops and a second test file, the
// restore suite took more than 120 s.
describeEachStore('catalogue restore', { env: false, timeout: 600_000 }, (ctx) => {
  /** The environment of a command over a new empty database of this block's kind. */
  const freshEnv = async (t: TestContext): Promise<{ DATABASE_URL: string }> => ({ DATABASE_URL: databaseUrl((await ctx.freshDatabase(t)).location) });

  /** A catalogue whose pks have gaps (products 2 and 5 removed), exported in `format` to a file. */
  async function exported(t: TestContext, format: 'csv' | 'json'): Promise<{ file: string; text: string }> {
    const env = await freshEnv(t);
    const dir = folder(t);
    const rows = ['Espresso 1 kg', '"Tea, green"', '=1+1 formula', 'Milk 1 l', 'Gone too', 'Café crème'].map((name, i) => `${name},${uniqueBarcode()},${i + 1}.50`);
    writeFileSync(join(dir, 'stock.csv'), ['name,barcode,price', ...rows, ''].join('\n'));
    assert.equal((await runCli('import', [join(dir, 'stock.csv')], env)).code, 0);
    const barcodes = rows.map((row) => row.split(',').at(-2)!);
    assert.equal((await runCli('remove', [barcodes[1]!, barcodes[4]!], env)).code, 0);
    const file = join(dir, `backup.${format}`);
    assert.deepEqual(await runCli('export', [file], env), { code: 0, stdout: '', stderr: `Exported 4 products to ${file}.\n` });
    return { file, text: readFileSync(file, 'utf8') };
  }

  for (const format of ['csv', 'json'] as const) {
    it(`gives back every product of a ${format.toUpperCase()} export with its pk, name, barcode and price; later creates follow the highest pk`, async (t) => {
      const backup = await exported(t, format);
      const env = await freshEnv(t);
      assert.deepEqual(await runCli('restore', [backup.file], env), {
        code: 0,
        stdout: '',
        stderr: `Restored 4 products from ${backup.file}. Tills following the change feed start their copies again.\n`,
      });
      assert.equal((await runCli('export', ['--format', format], env)).stdout, backup.text);

      const dir = folder(t);
      writeFileSync(join(dir, 'new.json'), JSON.stringify([{ name: 'After', barcode: uniqueBarcode(), price: '1.00' }]));
      assert.equal((await runCli('import', [join(dir, 'new.json')], env)).code, 0);
      const after = JSON.parse((await runCli('export', ['--format', 'json'], env)).stdout) as Array<{ pk: number; name: string }>;
      assert.deepEqual(after.map(({ pk, name }) => [pk, name]), [[1, 'Espresso 1 kg'], [3, '=1+1 formula'], [4, 'Milk 1 l'], [6, 'Café crème'], [7, 'After']]);
    });
  }

  it('names at export the products plain SQL wrote that a restore refuses or trims, and writes them as stored', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    const env = { DATABASE_URL: databaseUrl(location) };
    assert.equal((await runCli('migrate', [], env)).code, 0);
    const long = 'x'.repeat(201);
    const rows: Array<[string, string]> = [['Good', uniqueBarcode()], [long, uniqueBarcode()], ['Tab\there', uniqueBarcode()], ['', uniqueBarcode()], ['No EAN', '1234'], ['  Spaced  ', uniqueBarcode()]];
    for (const [name, barcode] of rows) await outsideSql(location, 'INSERT INTO product (name, barcode, price_cents) VALUES ($1, $2, 100)', [name, barcode]);

    const file = join(folder(t), 'backup.json');
    assert.deepEqual(await runCli('export', [file], env), {
      code: 0,
      stdout: '',
      stderr: [
        `Exported 6 products to ${file}.`,
        'Warning: 5 of them do not restore as written (pk 2, 3, 4, 5, 6): plain SQL wrote a name or barcode that the API does not take, which catalogue restore refuses (or, for spaces around a name, trims). Correct them in the catalogue and export again, or in the file before restoring it.',
        '',
      ].join('\n'),
    });
    const written = JSON.parse(readFileSync(file, 'utf8')) as Array<{ name: string; barcode: string }>;
    assert.deepEqual(written.map(({ name, barcode }) => [name, barcode]), rows);
    // The warning is true: the restore refuses the four, by their lines.
    const restored = await runCli('restore', [file], await freshEnv(t));
    assert.equal(restored.code, 1);
    assert.deepEqual(restored.stderr.split('\n').map((line) => line.split(':')[0]), ['line 3, item 2', 'line 4, item 3', 'line 5, item 4', 'line 6, item 5', '4 rows are not valid; nothing was restored. A restore takes the whole file', '']);

    // Once corrected, the export is quiet.
    await outsideSql(location, "UPDATE product SET name = 'Fixed' WHERE pk IN (2, 3, 4, 6)");
    await outsideSql(location, 'DELETE FROM product WHERE pk = 5');
    assert.deepEqual(await runCli('export', [file], env), { code: 0, stdout: '', stderr: `Exported 5 products to ${file}.\n` });
  });

  it('refuses a catalogue that holds products without --replace, changing nothing; with it, replaces them', async (t) => {
    const backup = await exported(t, 'csv');
    const env = await freshEnv(t);
    const dir = folder(t);
    writeFileSync(join(dir, 'other.csv'), `name,barcode,price\nAlready here,${uniqueBarcode()},3.00\n`);
    assert.equal((await runCli('import', [join(dir, 'other.csv')], env)).code, 0);
    const before = (await runCli('export', [], env)).stdout;

    assert.deepEqual(await runCli('restore', [backup.file], env), {
      code: 1,
      stdout: '',
      stderr: `The catalogue holds 1 product; a restore loads into an empty catalogue unless told to replace what is there. Pass --replace to put ${backup.file} in their place. Nothing was restored.\n`,
    });
    assert.equal((await runCli('export', [], env)).stdout, before);

    assert.deepEqual(await runCli('restore', ['--replace', backup.file], env), {
      code: 0,
      stdout: '',
      stderr: `Restored 4 products from ${backup.file}, in place of the 1 product there before. Tills following the change feed start their copies again.\n`,
    });
    assert.equal((await runCli('export', [], env)).stdout, backup.text);
  });

  it('lists every bad row (a pk missing, repeated or not a whole number, a bad product) and restores nothing', async (t) => {
    const env = await freshEnv(t);
    const dir = folder(t);
    const file = join(dir, 'bad.csv');
    const [a, b, c, d] = [uniqueBarcode(), uniqueBarcode(), uniqueBarcode(), uniqueBarcode()];
    writeFileSync(file, ['pk,name,barcode,price', `1,Good,${a},1.00`, `,No pk,${b},1.00`, `1,Same pk,${c},1.00`, `1.5,Half,${d},1.00`, `0,Zero and bad,4006381333932,1e3`, ''].join('\n'));
    assert.deepEqual(await runCli('restore', [file], env), {
      code: 1,
      stdout: '',
      stderr: [
        'line 3: pk: "" is not a pk; a pk is a whole number from 1, in plain digits.',
        'line 4: pk: 1 is also on line 2.',
        'line 5: pk: "1.5" is not a pk; a pk is a whole number from 1, in plain digits.',
        'line 6: pk: "0" is not a pk; a pk is a whole number from 1, in plain digits. barcode: EAN-13 check digit is wrong: expected 1, got 2. price: Exponent notation is not accepted; write the price in plain digits, e.g. "1000.00".',
        '4 rows are not valid; nothing was restored. A restore takes the whole file: fix them first.',
        '',
      ].join('\n'),
    });
    // A header without the pk column is no export, even with no rows under it: nothing is replaced.
    const importFile = join(dir, 'import-header.csv');
    writeFileSync(importFile, 'name,barcode,price\n');
    assert.deepEqual(await runCli('restore', ['--replace', importFile], env), {
      code: 1,
      stdout: '',
      stderr: `${importFile}: Line 1: the header must name the columns pk,name,barcode,price once each (any order), as an export does, separated by commas or semicolons; found name,barcode,price. Nothing was restored.\n`,
    });
    const empty = join(dir, 'empty.csv');
    writeFileSync(empty, '');
    assert.match((await runCli('restore', [empty], env)).stderr, /: The file is empty; the first line must be the header pk,name,barcode,price\. Nothing was restored\.\n$/);
    const noPk = join(dir, 'no-pk.json');
    writeFileSync(noPk, JSON.stringify([{ name: 'Imported, not exported', barcode: a, price: '1.00' }]));
    assert.deepEqual(await runCli('restore', [noPk], env), {
      code: 1,
      stdout: '',
      stderr: "line 1, item 1: pk: This field is required: a restore keeps every product's pk (an export writes them).\n1 row is not valid; nothing was restored. A restore takes the whole file: fix them first.\n",
    });
    assert.equal((await runCli('export', [], env)).stdout, 'pk,name,barcode,price\n');
    assert.equal((await runCli('restore', [], env)).code, 2);
    assert.equal((await runCli('restore', ['--merge', file], env)).code, 2);
  });

  it('refuses a JSON pk written as a string and a pk past 2^53 - 1, naming their lines; a failed restore says "restored"', async (t) => {
    const env = await freshEnv(t);
    const dir = folder(t);
    const file = join(dir, 'other-program.json');
    const item = (pk: string): string => `{"pk": ${pk}, "name": "Item", "barcode": "${uniqueBarcode()}", "price": "1.00"}`;
    writeFileSync(file, `[\n${[item('"1"'), item('9007199254740991'), item('9007199254740992'), item('3')].join(',\n')}\n]\n`);
    assert.deepEqual(await runCli('restore', [file], env), {
      code: 1,
      stdout: '',
      stderr: [
        'line 2, item 1: pk: "1" is a string; a pk is a JSON number, a whole number from 1 without quotes.',
        'line 4, item 3: pk: 9007199254740992 is larger than the largest pk, 9007199254740991.',
        '2 rows are not valid; nothing was restored. A restore takes the whole file: fix them first.',
        '',
      ].join('\n'),
    });
    const csv = join(dir, 'big.csv');
    writeFileSync(csv, `pk,name,barcode,price\n99999999999999999999,Far,${uniqueBarcode()},1.00\n`);
    assert.equal((await runCli('restore', [csv], env)).stderr, 'line 2: pk: 99999999999999999999 is larger than the largest pk, 9007199254740991.\n1 row is not valid; nothing was restored. A restore takes the whole file: fix them first.\n');
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{"pk": 1}');
    const unreadable = await runCli('restore', [notJson], env);
    assert.equal(unreadable.code, 1);
    assert.match(unreadable.stderr, /^[^\n]*\. Nothing was restored\.\n$/);
    assert.equal((await runCli('export', [], env)).stdout, 'pk,name,barcode,price\n');
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`stopped by ${signal} once it has written rows, puts the catalogue back as it was and says so in one line`, async (t) => {
      const database = await ctx.freshDatabase(t);
      const env = { DATABASE_URL: databaseUrl(database.location) };
      const dir = folder(t);
      writeFileSync(join(dir, 'there.csv'), `name,barcode,price\nThere before,${uniqueBarcode()},3.00\nAlso there,${uniqueBarcode()},4.00\n`);
      assert.equal((await runCli('import', [join(dir, 'there.csv')], env)).code, 0);
      const before = (await runCli('export', [], env)).stdout;

      // A pipe, read once to check and once to write: the test decides when its rows arrive.
      const pipe = join(dir, 'backup.csv');
      execFileSync('mkfifo', [pipe]);
      const rows = Array.from({ length: 1_500 }, (_, i) => `${i + 10},Restored ${i + 1},${uniqueBarcode()},1.00`);
      const child = await startCli('restore', ['--replace', pipe], env);
      t.after(() => child.process.kill('SIGKILL'));
      // The check reads the pipe to its end; another pipe takes its place before that end, so that the
      // writing pass, opening the file again, finds the second (a writer opened before the check has
      // closed its end would feed the check instead).
      const checking = await open(pipe, 'w');
      await checking.write(['pk,name,barcode,price', ...rows, ''].join('\n'));
      const second = join(dir, 'second.csv');
      execFileSync('mkfifo', [second]);
      renameSync(second, pipe);
      await checking.close();
      const writing = createWriteStream(pipe);
      t.after(() => writing.destroy());
      writing.write(['pk,name,barcode,price', ...rows.slice(0, 1_200), ''].join('\n'));
      // The first thousand rows written, the rest not yet read: the products there before are gone.
      await passesWithin(60_000, async () => {
        const [row] = await outsideSql<{ n: number | string }>(database.location, "SELECT COUNT(*) AS n FROM product WHERE name LIKE 'Restored %'");
        assert.equal(Number(row!.n), 1_000);
      });
      child.process.kill(signal);
      // Once it has taken the signal (it says so), the read still waiting for the pipe's rows ends with
      // the pipe; ended before, the restore could read the end and finish first.
      const heard = `${signal}: stopping after the step under way; what was written will be undone.\n`;
      await passesWithin(60_000, async () => assert.equal(child.stderr(), heard));
      writing.end();
      assert.deepEqual(await child.exited, { code: 1, signal: null });
      assert.equal(child.stderr(), `${heard}Stopped by ${signal}; what was written is undone: nothing was restored.\n`);
      assert.equal((await runCli('export', [], env)).stdout, before);
    });
  }
});
