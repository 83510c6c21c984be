import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import type { DatabaseLocation } from '../../src/config.js';
import { openStore } from '../../src/storage/open-store.js';
import { ROOT } from '../helpers/build.js';
import { databaseUrl } from '../helpers/child-server.js';
import { runCli, withPks } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { uniqueBarcode } from '../helpers/products.js';
import { storedCount } from '../helpers/store-contents.js';
import { sqlite, type TestStore } from '../helpers/stores.js';

const SAMPLE = join(ROOT, 'samples/products.csv');

async function freshDatabase(t: TestContext, testStore: TestStore): Promise<{ env: Record<string, string>; location: DatabaseLocation }> {
  const { location, drop } = await testStore.create();
  t.after(drop);
  return { env: { DATABASE_URL: databaseUrl(location) }, location };
}

function tempFile(t: TestContext, name: string, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-import-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

async function count(location: DatabaseLocation): Promise<number> {
  const store = await openStore(location);
  try {
    return await storedCount(store);
  } finally {
    await store.close();
  }
}

describeEachStore('npm run import / export', { env: false, timeout: 360_000 }, (ctx) => {
  it('imports the sample file and exports the same products back', async (t) => {
    const { env } = await freshDatabase(t, ctx.testStore);
    const imported = await runCli('import', [SAMPLE], env);
    assert.equal(imported.stdout, '');
    assert.equal(imported.stderr, `Imported 320 products from ${SAMPLE}.\n`);
    assert.equal(imported.code, 0);

    const exported = await runCli('export', [], env);
    assert.equal(exported.code, 0);
    assert.equal(exported.stdout, withPks(readFileSync(SAMPLE, 'utf8')));
    assert.equal(exported.stderr, 'Exported 320 products.\n');
  });

  it('reports every bad row by line and imports nothing', async (t) => {
    const { env, location } = await freshDatabase(t, ctx.testStore);
    const taken = uniqueBarcode();
    const good = uniqueBarcode();
    assert.equal((await runCli('import', [tempFile(t, 'first.csv', `name,barcode,price\nAlready here,${taken},1.00\n`)], env)).code, 0);

    const file = tempFile(
      t,
      'bad.csv',
      [
        'price,name,barcode',
        `2.50,Good one,${good}`,
        '1.00,Wrong check digit,4006381333932',
        `1e3,Exponent price,${uniqueBarcode()}`,
        `3.00,Taken,${taken}`,
        `4.00,Twice,${good}`,
        `,${uniqueBarcode()}`,
        `5.00,"Line`,
        `break",${uniqueBarcode()}`,
      ].join('\n'),
    );
    const result = await runCli('import', [file], env);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.deepEqual(result.stderr.trim().split('\n'), [
      'line 3: barcode: EAN-13 check digit is wrong: expected 1, got 2.',
      'line 4: price: Exponent notation is not accepted; write the price in plain digits, e.g. "1000.00".',
      `line 5: barcode: ${taken} is already in the catalogue.`,
      `line 6: barcode: ${good} is also on line 2.`,
      'line 7: Expected 3 fields (price,name,barcode), found 2.',
      'line 8: name: The name must not contain control characters (such as tabs or line breaks).',
      "6 rows are not valid (1 only for being in the catalogue already: --update takes the file's names and prices for those); nothing was imported. Fix them, or pass --skip-invalid to import the valid rows only.",
    ]);
    assert.equal(await count(location), 1);

    const skipping = await runCli('import', ['--skip-invalid', file], env);
    assert.equal(skipping.code, 0);
    assert.equal(skipping.stdout, '');
    assert.equal(skipping.stderr.split('\n').at(-2), `Imported 1 product from ${file}; skipped 6 invalid rows.`);
    assert.equal(await count(location), 2);
  });
});

describe('npm run import, file formats', { timeout: 360_000 }, () => {
  const testStore = sqlite;

  it('reads JSON with numbers kept exact, and exports JSON', async (t) => {
    const { env } = await freshDatabase(t, testStore);
    const [a, b] = [uniqueBarcode(), uniqueBarcode()];
    const file = tempFile(t, 'products.json', `[\n  {"name": "Café crème", "barcode": "${a}", "price": 0.1},\n  {"name": "Tea", "barcode": "${b}", "price": "12"}\n]\n`);
    const imported = await runCli('import', [file], env);
    assert.equal(imported.code, 0, imported.stderr);
    const exported = await runCli('export', ['--format', 'json'], env);
    assert.deepEqual(JSON.parse(exported.stdout), [
      { pk: 1, name: 'Café crème', barcode: a, price: '0.10' },
      { pk: 2, name: 'Tea', barcode: b, price: '12.00' },
    ]);
  });

  it('writes CSV that a spreadsheet does not run as formulas, and imports it back exactly', async (t) => {
    const { env } = await freshDatabase(t, testStore);
    const names = [
      '=HYPERLINK("http://example.com","Click")',
      '+1 pack',
      '-5 % off',
      '@SUM(A1)',
      "'=already quoted",
      "''+quoted twice",
      "'quoted only",
      'Tea; =1+1',
      '\uFF1Dfull width',
      'Plain tea - green',
    ];
    const products = names.map((name) => ({ name, barcode: uniqueBarcode(), price: '1.00' }));
    const imported = await runCli('import', [tempFile(t, 'products.json', JSON.stringify(products))], env);
    assert.equal(imported.code, 0, imported.stderr);

    const exported = await runCli('export', [], env);
    assert.equal(exported.code, 0, exported.stderr);
    const written = [
      `"'=HYPERLINK(""http://example.com"",""Click"")"`,
      "'+1 pack",
      "'-5 % off",
      "'@SUM(A1)",
      "''=already quoted",
      "'''+quoted twice",
      "'quoted only",
      '"Tea; =1+1"',
      "'\uFF1Dfull width",
      'Plain tea - green',
    ];
    assert.equal(exported.stdout, ['pk,name,barcode,price', ...products.map(({ barcode }, i) => `${i + 1},${written[i]},${barcode},1.00`), ''].join('\n'));

    // Imported into another catalogue, and as a price list into the same one, the names are the originals.
    const file = tempFile(t, 'exported.csv', exported.stdout);
    const other = await freshDatabase(t, testStore);
    assert.equal((await runCli('import', [file], other.env)).code, 0);
    assert.deepEqual(JSON.parse((await runCli('export', ['--format', 'json'], other.env)).stdout), products.map((product, i) => ({ pk: i + 1, ...product })));
    const update = await runCli('import', ['--update', file], env);
    assert.equal(update.code, 0, update.stderr);
    assert.match(update.stderr, /0 added, 0 changed, 10 unchanged\./);
  });

  it('reports JSON items by the line they start on and their place in the array', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    const text = `[\n{"name": "A", "barcode": "${uniqueBarcode()}", "price": 1},\n{"name": "B",\n "barcode": 4006381333931, "price": 1},\n7,\n{"name": "C" "barcode": "x"}\n]`;
    // Lines end with LF, CRLF or a CR alone alike.
    for (const end of ['\n', '\r\n', '\r']) {
      const result = await runCli('import', [tempFile(t, 'bad.json', text.replaceAll('\n', end))], env);
      assert.equal(result.code, 1);
      assert.deepEqual(result.stderr.trim().split('\n').map((line) => line.split(':')[0]), ['line 3, item 2', 'line 5, item 3', 'line 6, item 4', '3 rows are not valid; nothing was imported. Fix them, or pass --skip-invalid to import the valid rows only.'], JSON.stringify(end));
    }
    // A string never closed: named by its item, not by the end of the file.
    const unclosed = tempFile(t, 'unclosed.json', `[\n{"name": "A", "barcode": "${uniqueBarcode()}", "price": 1},\n\n{"name": "never closed\n\n\n`);
    assert.equal(
      (await runCli('import', [unclosed], env)).stderr,
      `${unclosed}: Line 4, item 2: the file ends inside this item (a string, object or array opened in it is not closed). Nothing was imported.\n`,
    );
    assert.equal(await count(location), 0);
  });

  it('judges each JSON item on its own, even beside a bad item on the same line', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    const [kept, repeated, later] = [uniqueBarcode(), uniqueBarcode(), uniqueBarcode()];
    const items = [
      `{"name":"Kept","barcode":"${kept}","price":"12.50"}`,
      `{"name":"M","barcode":"${repeated}","price":"1","name":"N"}`,
      `{"name":"Twice","barcode":"${kept}","price":"1"}`,
      `{"name":"Later","barcode":"${later}","price":"2"}`,
    ];
    const file = tempFile(t, 'one-line.json', `[${items.join(',')}]\n`);
    const result = await runCli('import', ['--skip-invalid', file], env);
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stderr.trim().split('\n');
    assert.match(lines[0]!, /^line 1, item 2: Not valid JSON: Duplicate key 'name'/);
    assert.deepEqual(lines.slice(1), [`line 1, item 3: barcode: ${kept} is also on line 1, item 1.`, `Imported 2 products from ${file}; skipped 2 invalid rows.`]);
    assert.equal(await count(location), 2);
    const exported = await runCli('export', ['--format', 'json'], env);
    assert.deepEqual(
      (JSON.parse(exported.stdout) as Array<{ name: string }>).map((product) => product.name),
      ['Kept', 'Later'],
    );
  });

  it('refuses a file that is not in the format as a whole', async (t) => {
    const { env } = await freshDatabase(t, testStore);
    const header = await runCli('import', [tempFile(t, 'x.csv', 'name,ean,price\nA,4006381333931,1.00\n')], env);
    assert.equal(header.code, 1);
    assert.match(header.stderr, /Line 1: the header must name the columns name,barcode,price/);
    const notArray = await runCli('import', [tempFile(t, 'x.json', '{"name": "A"}')], env);
    assert.equal(notArray.code, 1);
    assert.match(notArray.stderr, /must hold one array/);
    // No JSON has a comma with no item after it, before the ] as anywhere else.
    const item = '{"name": "A", "barcode": "4006381333931", "price": "1"}';
    for (const [text, problem] of [
      [`[${item},]`, 'Line 1: an empty item in the array (a comma before the closing ]).'],
      [`[\n${item},\n\n]`, 'Line 2: an empty item in the array (a comma before the closing ]).'],
      [`[${item},,${item}]`, 'Line 1: an empty item in the array.'],
      [`[\n${item}\n`, 'Line 3: the file ends before the array is closed with ].'],
    ] as const) {
      const file = tempFile(t, 'comma.json', text);
      assert.deepEqual(await runCli('import', [file], env), { code: 1, stdout: '', stderr: `${file}: ${problem} Nothing was imported.\n` }, text);
    }
    assert.deepEqual((await runCli('import', [tempFile(t, 'empty.json', '[ ]')], env)).code, 0);
    const missing = await runCli('import', ['/nonexistent/products.csv'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Cannot read \/nonexistent\/products.csv/);
  });

  it('names each row by the line it starts on in a CRLF file whose quoted fields hold line breaks', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    // A CR alone ends a line too, as an editor shows it; the file mixes all three.
    const file = tempFile(t, 'crlf.csv', `name,barcode,price\r\n"two\r\nlines",${uniqueBarcode()},1.00\r\n\r\n"three\r\nmore\rlines",${uniqueBarcode()},1.00\r\nbad,4006381333932,1.00\rworse,4006381333932\n`);
    const result = await runCli('import', [file], env);
    assert.equal(result.code, 1);
    assert.deepEqual(result.stderr.trim().split('\n').map((line) => line.split(':')[0]), ['line 2', 'line 5', 'line 8', 'line 9', '4 rows are not valid; nothing was imported. Fix them, or pass --skip-invalid to import the valid rows only.']);
    assert.equal(await count(location), 0);
  });

  it('names the line a bad byte or an unclosed quote is on, whatever ends the lines', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    const barcodes = [uniqueBarcode(), uniqueBarcode(), uniqueBarcode()];
    for (const end of ['\r', '\r\n', '\n']) {
      const latin1 = tempFile(t, 'latin1.csv', '');
      writeFileSync(latin1, Buffer.concat([Buffer.from(`name,barcode,price${end}A,${barcodes[0]},1${end}B,${barcodes[1]},1${end}caf`), Buffer.from([0xe9]), Buffer.from(`,${barcodes[2]},1${end}`)]));
      assert.equal((await runCli('import', [latin1], env)).stderr, `${latin1}: Line 4: the file is not valid UTF-8. Nothing was imported.\n`, JSON.stringify(end));
      const unclosed = tempFile(t, 'unclosed.csv', [`name,barcode,price`, `A,${barcodes[0]},1`, '', `"B,${barcodes[1]},1`, ...Array.from({ length: 50 }, () => `C,${barcodes[2]},1`), ''].join(end));
      assert.equal(
        (await runCli('import', [unclosed], env)).stderr,
        `${unclosed}: Line 4: the row that starts here opens a quote that is not closed before the end of the file. Nothing was imported.\n`,
        JSON.stringify(end),
      );
      const closedTooSoon = tempFile(t, 'closing.csv', [`name,barcode,price`, '', ...Array.from({ length: 20 }, () => `A,${barcodes[0]},1`), `B,"${barcodes[1]}"x,1`, ''].join(end));
      assert.equal(
        (await runCli('import', [closedTooSoon], env)).stderr,
        `${closedTooSoon}: Line 23: a quoted field of the row that starts here has more after its closing quote (a quote inside a quoted field is written twice: ""). Nothing was imported.\n`,
        JSON.stringify(end),
      );
    }
    assert.equal(await count(location), 0);
  });

  it('stops at a row far longer than a product takes, before holding it, and imports nothing', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    const file = tempFile(t, 'long.csv', `name,barcode,price\nFine,${uniqueBarcode()},1.00\n"${'x'.repeat(5_000_000)}",${uniqueBarcode()},1.00\n`);
    assert.deepEqual(await runCli('import', [file], env), {
      code: 1,
      stdout: '',
      stderr: `${file}: Line 3: a row is longer than 64 KiB (65,536 bytes), far more than a product takes. Nothing was imported.\n`,
    });
    // A file of one line without quotes or a line end: stopped before its end is looked for.
    const oneLine = tempFile(t, 'one-line.csv', 'x'.repeat(5_000_000));
    assert.equal((await runCli('import', [oneLine], env)).stderr, `${oneLine}: Line 1: a row is longer than 64 KiB (65,536 bytes), far more than a product takes. Nothing was imported.\n`);
    // A row of separators alone is bounded as one of fields is.
    const separators = tempFile(t, 'separators.csv', `name,barcode,price\nx,${uniqueBarcode()},1.00${','.repeat(5_000_000)}\n`);
    assert.equal((await runCli('import', [separators], env)).stderr, `${separators}: Line 2: a row is longer than 64 KiB (65,536 bytes), far more than a product takes. Nothing was imported.\n`);
    // A JSON item is bounded as a CSV row is.
    const json = tempFile(t, 'long.json', `[\n{"name": "${'x'.repeat(5_000_000)}", "barcode": "${uniqueBarcode()}", "price": 1}]`);
    assert.equal((await runCli('import', [json], env)).stderr, `${json}: Line 2, item 1: a row is longer than 64 KiB (65,536 bytes), far more than a product takes. Nothing was imported.\n`);
    // The bound is in bytes: 40,000 characters of two bytes each are past it.
    const wideChars = tempFile(t, 'wide-chars.csv', `name,barcode,price\n${'é'.repeat(40_000)},${uniqueBarcode()},1.00\n`);
    assert.equal((await runCli('import', [wideChars], env)).stderr, `${wideChars}: Line 2: a row is longer than 64 KiB (65,536 bytes), far more than a product takes. Nothing was imported.\n`);
    // A header of many columns is shown cut, not whole.
    const wide = await runCli('import', [tempFile(t, 'wide.csv', `name,barcode,price${',x'.repeat(20_000)}\n`)], env);
    assert.match(wide.stderr, /found name,barcode,price,x,x.{0,400}…\. Nothing was imported\.\n$/);
    assert.equal(await count(location), 0);
  });

  it('reads a CSV file separated by semicolons, as a spreadsheet writes it, told by its header, and skips its rows of empty cells', async (t) => {
    const { env } = await freshDatabase(t, testStore);
    const [a, b] = [uniqueBarcode(), uniqueBarcode()];
    const file = tempFile(t, 'sheet.csv', `\uFEFFname;barcode;price\r\n"Tea, green";${a};2.50\r\n;;\r\n  ; ;\r\nCoffee;${b};12\r\n"";"";""\r\n;;\r\n`);
    const imported = await runCli('import', [file], env);
    assert.deepEqual(imported, { code: 0, stdout: '', stderr: `Imported 2 products from ${file}.\n` });
    assert.deepEqual(JSON.parse((await runCli('export', ['--format', 'json'], env)).stdout), [
      { pk: 1, name: 'Tea, green', barcode: a, price: '2.50' },
      { pk: 2, name: 'Coffee', barcode: b, price: '12.00' },
    ]);
    // A decimal comma is still no price: the row says what to write.
    const comma = await runCli('import', [tempFile(t, 'comma.csv', `name;barcode;price\n;;\nMilk;${uniqueBarcode()};1,20\n`)], env);
    assert.equal(comma.code, 1);
    assert.match(comma.stderr, /^line 3: price: "1,20" is not a price; write digits with an optional point and up to 2 decimals, e\.g\. "12\.50"\.\n/);
    // A header in neither form names what it found, with the separators it reads.
    const header = await runCli('import', [tempFile(t, 'tabs.csv', 'name\tbarcode\tprice\n')], env);
    assert.equal(header.code, 1);
    assert.match(header.stderr, /Line 1: the header must name the columns name,barcode,price once each \(any order, pk too\), separated by commas or semicolons; found name\tbarcode\tprice\./);
  });

  it('ignores the pk column of an export, and points a file imported again to --update', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    const [a, b] = [uniqueBarcode(), uniqueBarcode()];
    const file = tempFile(t, 'export.csv', `pk,name,barcode,price\n7,Tea,${a},2.50\n9,Coffee,${b},12.00\n`);
    assert.equal((await runCli('import', [file], env)).code, 0);
    assert.deepEqual(JSON.parse((await runCli('export', ['--format', 'json'], env)).stdout), [
      { pk: 1, name: 'Tea', barcode: a, price: '2.50' },
      { pk: 2, name: 'Coffee', barcode: b, price: '12.00' },
    ]);
    const again = await runCli('import', [file], env);
    assert.deepEqual(again, {
      code: 1,
      stdout: '',
      stderr: [
        `line 2: barcode: ${a} is already in the catalogue.`,
        `line 3: barcode: ${b} is already in the catalogue.`,
        'All 2 rows name products already in the catalogue (by barcode); nothing was imported. Pass --update to take their names and prices from the file.',
        '',
      ].join('\n'),
    });
    assert.equal(await count(location), 2);
  });

  it('refuses a CSV file that is not UTF-8, and a folder, with one line and nothing imported', async (t) => {
    const { env, location } = await freshDatabase(t, testStore);
    const latin = tempFile(t, 'latin.csv', '');
    writeFileSync(latin, Buffer.concat([Buffer.from(`name,barcode,price\nCaf`), Buffer.from([0xe9]), Buffer.from(`,${uniqueBarcode()},1.00\n`)]));
    const notUtf8 = await runCli('import', [latin], env);
    assert.equal(notUtf8.code, 1);
    assert.equal(notUtf8.stderr, `${latin}: Line 2: the file is not valid UTF-8. Nothing was imported.\n`);
    const folder = await runCli('import', [tmpdir()], env);
    assert.equal(folder.code, 1);
    assert.match(folder.stderr, /^.*Cannot read .*EISDIR.* Nothing was imported\.\n$/);
    assert.equal(await count(location), 0);
  });
});
