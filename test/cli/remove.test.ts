import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import { databaseUrl } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { postJson, send } from '../helpers/http.js';
import { createProduct, listAll, uniqueBarcode } from '../helpers/products.js';

function tempFile(t: TestContext, name: string, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-remove-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describeEachStore('catalogue remove', { timeout: 360_000 }, (ctx) => {
  const env = () => ({ DATABASE_URL: databaseUrl(ctx.server.location) });
  const remove = (args: readonly string[]) => runCli('remove', args, env());

  it('removes products by barcode: gone from every listing and count, 404, barcode free, pk never used again', async () => {
    const { url } = ctx.server;
    const kept = await createProduct(url, { name: 'Kept' });
    const first = await createProduct(url, { name: 'First to go' });
    const second = await createProduct(url, { name: 'Second to go' });

    assert.deepEqual(await remove([first.barcode, second.barcode]), { code: 0, stdout: '', stderr: 'Removed 2 products.\n' });

    assert.equal((await send(`${url}/api/v1/shop/product/${first.pk}`)).status, 404);
    const all = await listAll(url);
    assert.ok(all.some((p) => p.pk === kept.pk));
    assert.ok(!all.some((p) => p.pk === first.pk || p.pk === second.pk));
    const search = await send(`${url}/api/v2/shop/products?search=${encodeURIComponent('to go')}`);
    assert.deepEqual((search.json as { count: number }).count, 0);
    const byBarcode = await send(`${url}/api/v1/shop/products?barcode=${first.barcode}`);
    assert.deepEqual(byBarcode.json, []);
    // The barcode is free again, for a product with a new pk.
    const again = await createProduct(url, { name: 'Back again', barcode: first.barcode });
    assert.ok(again.pk > second.pk);
  });

  it('removes all or nothing: a barcode no product has, or one that is no barcode, is named and nothing goes', async (t) => {
    const { url } = ctx.server;
    const stays = await createProduct(url, { name: 'Stays' });
    const unknown = uniqueBarcode();
    const result = await remove([stays.barcode, unknown, '4006381333932']);
    assert.deepEqual(result, {
      code: 1,
      stdout: '',
      stderr: [
        `argument 2: no product has barcode ${unknown}.`,
        'argument 3: The EAN-13 check digit is wrong: expected 1, got 2.',
        '2 barcodes are not valid or not in the catalogue; nothing was removed.',
        '',
      ].join('\n'),
    });
    assert.equal((await send(`${url}/api/v1/shop/product/${stays.pk}`)).status, 200);

    // The same from a file: an export's CSV (barcode column among others) or one barcode per line.
    const csv = tempFile(t, 'list.csv', `name,barcode,price\nStays,${stays.barcode},1.00\nGone,${unknown},2.00\n`);
    const fromCsv = await remove(['--file', csv]);
    assert.equal(fromCsv.code, 1);
    assert.equal(fromCsv.stderr, `line 3: no product has barcode ${unknown}.\n1 barcode is not valid or not in the catalogue; nothing was removed.\n`);
    assert.equal((await send(`${url}/api/v1/shop/product/${stays.pk}`)).status, 200);
  });

  it('reads barcodes from a file, one per line or in a CSV column, 12-digit UPC-A included', async (t) => {
    const { url } = ctx.server;
    const upc = await createProduct(url, { name: 'UPC product', barcode: '0036000291452' });
    const lines = await createProduct(url, { name: 'From lines' });
    const fromCsv = await createProduct(url, { name: 'From CSV' });
    assert.deepEqual(await remove(['--file', tempFile(t, 'list.txt', `\n036000291452\n${lines.barcode}\n${lines.barcode}\n`)]), {
      code: 0,
      stdout: '',
      stderr: 'Removed 2 products.\n',
    });
    assert.deepEqual(await remove(['--file', tempFile(t, 'list.csv', `barcode\r\n${fromCsv.barcode}\r\n`)]), { code: 0, stdout: '', stderr: 'Removed 1 product.\n' });
    // A column of barcodes kept as text, each quoted, as some spreadsheets save it; spaces around too.
    const quoted = await createProduct(url, { name: 'Quoted' });
    const spaced = await createProduct(url, { name: 'Spaced' });
    assert.deepEqual(await remove(['--file', tempFile(t, 'quoted.txt', `"${quoted.barcode}"\n  " ${spaced.barcode} "  \n`)]), { code: 0, stdout: '', stderr: 'Removed 2 products.\n' });
    const unbalanced = await remove(['--file', tempFile(t, 'unbalanced.txt', `"${quoted.barcode}\n`)]);
    assert.equal(unbalanced.code, 1);
    assert.match(unbalanced.stderr, /^line 1: /);
    for (const product of [upc, lines, fromCsv, quoted, spaced]) assert.equal((await send(`${url}/api/v1/shop/product/${product.pk}`)).status, 404);
  });

  it('reads a CSV list as an import does: quoted line breaks (CRLF too) and semicolons, naming each row by the line it starts on', async (t) => {
    const { url } = ctx.server;
    const [tea, coffee, cocoa] = [await createProduct(url, { name: 'Tea' }), await createProduct(url, { name: 'Coffee' }), await createProduct(url, { name: 'Cocoa' })];
    const unknown = uniqueBarcode();
    // A name plain SQL stored with line breaks, as an export writes it.
    const exported = `pk,name,barcode,price\r\n${tea.pk},"Tea\r\nin two lines",${tea.barcode},1.00\r\n${coffee.pk},"Coffee, ground",${coffee.barcode},2.00\r\n9,"Gone\nand gone",${unknown},3.00\r\n`;
    assert.deepEqual(await remove(['--file', tempFile(t, 'export.csv', exported)]), {
      code: 1,
      stdout: '',
      stderr: `line 5: no product has barcode ${unknown}.\n1 barcode is not valid or not in the catalogue; nothing was removed.\n`,
    });
    assert.deepEqual(await remove(['--file', tempFile(t, 'export.csv', exported.replace(/9,"Gone\nand gone",\d+,3.00\r\n$/, ''))]), { code: 0, stdout: '', stderr: 'Removed 2 products.\n' });
    assert.deepEqual(await remove(['--file', tempFile(t, 'semicolons.csv', `name;barcode;price\n"Cocoa;\nfine";${cocoa.barcode};1,00\n`)]), { code: 0, stdout: '', stderr: 'Removed 1 product.\n' });
    for (const product of [tea, coffee, cocoa]) assert.equal((await send(`${url}/api/v1/shop/product/${product.pk}`)).status, 404);
  });

  it('refuses a CSV row of another number of fields than the header, finds a header in any case or quoted, and stops at a line far too long', async (t) => {
    const { url } = ctx.server;
    const [first, second] = [await createProduct(url, { name: 'First' }), await createProduct(url, { name: 'Second' })];
    assert.deepEqual(await remove(['--file', tempFile(t, 'extra.csv', `barcode\n${first.barcode},${second.barcode}\n`)]), {
      code: 1,
      stdout: '',
      stderr: 'line 2: Expected 1 fields (barcode), found 2.\n1 barcode is not valid or not in the catalogue; nothing was removed.\n',
    });
    const tooLong = 'a row is longer than 64 KiB (65,536 bytes), far more than a product takes. Nothing was removed.\n';
    for (const [name, content, line] of [
      ['one-line.txt', '8'.repeat(5_000_000), 1],
      ['second-line.txt', `${first.barcode}\n${'8'.repeat(5_000_000)}`, 2],
      ['second-line.csv', `barcode\n${first.barcode}\n${'8'.repeat(5_000_000)}`, 3],
    ] as const) {
      const file = tempFile(t, name, content);
      assert.deepEqual(await remove(['--file', file]), { code: 1, stdout: '', stderr: `${file}: Line ${line}: ${tooLong}` });
    }
    const twice = tempFile(t, 'twice.csv', `barcode,barcode\n${first.barcode},${second.barcode}\n`);
    assert.deepEqual(await remove(['--file', twice]), { code: 1, stdout: '', stderr: `${twice}: Line 1: a CSV file needs one barcode column; found barcode,barcode. Nothing was removed.\n` });
    const plainTooLong = tempFile(t, 'plain.txt', `${first.barcode}\n${'8'.repeat(65_537)}\n`);
    assert.deepEqual(await remove(['--file', plainTooLong]), { code: 1, stdout: '', stderr: `${plainTooLong}: Line 2: ${tooLong}` });
    assert.equal((await send(`${url}/api/v1/shop/product/${first.pk}`)).status, 200);
    // Old Macs end lines with a CR alone; a spreadsheet may quote its header.
    assert.deepEqual(await remove(['--file', tempFile(t, 'cr.csv', `"Barcode"\r"${first.barcode}"\r${second.barcode}\r`)]), { code: 0, stdout: '', stderr: 'Removed 2 products.\n' });
  });

  it('answers a replayed Idempotency-Key of a removed product with 410, creating nothing', async () => {
    const { url } = ctx.server;
    const body = JSON.stringify({ name: 'Keyed', barcode: uniqueBarcode(), price: '1.00' });
    const created = await postJson(`${url}/api/v1/shop/product/`, body, { 'Idempotency-Key': 'remove-then-retry' });
    assert.equal(created.status, 201);
    const product = created.json as { pk: number; barcode: string };
    assert.equal((await remove([product.barcode])).code, 0);
    const retried = await postJson(`${url}/api/v1/shop/product/`, body, { 'Idempotency-Key': 'remove-then-retry' });
    assert.equal(retried.status, 410);
    assert.deepEqual(retried.json, {
      type: 'about:blank',
      title: 'Gone',
      status: 410,
      detail: `The product this Idempotency-Key created (pk ${product.pk}) has been removed from the catalogue since; it is not created again.`,
      errors: { 'Idempotency-Key': ['Its product has been removed.'] },
    });
    assert.deepEqual((await send(`${url}/api/v1/shop/products?barcode=${product.barcode}`)).json, []);
  });

  it('refuses a wrong command line with exit status 2', async () => {
    assert.equal((await remove([])).code, 2);
    assert.equal((await remove(['--file', 'x.txt', '4006381333931'])).code, 2);
  });
});
