import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, launchChromium, SCREENSHOTS } from '../helpers/browser.js';
import { ROOT } from '../helpers/build.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const CONTRACT = readFileSync(join(ROOT, 'docs/API.md'), 'utf8');

describe('the API reference at /docs, in a browser', { skip: browserSkip }, () => {
  let browser: Browser;
  let server: RunningServer;
  before(async () => {
    browser = await launchChromium();
    server = await startFreshServer(sqlite, { API_TOKEN: 'reference-token-0123456789' });
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('loads /openapi.json, lists the operations before HEAD and OPTIONS, offers no refused method, and links the contract', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(`${server.url}/docs`);
    await page.locator('.opblock').first().waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'api-reference.png'), fullPage: true });

    assert.ok(requested.includes(`${server.url}/openapi.json`), requested.join('\n'));
    assert.ok(!requested.some((url) => url.includes('/docs/json')), requested.join('\n'));
    assert.deepEqual(requested.filter((url) => !url.startsWith(server.url)), []);
    // The address box of the reference shows the document a client would fetch.
    assert.equal(await page.locator('.topbar select option').first().textContent(), '/openapi.json');

    const tags = await page.locator('.opblock-tag-section h3 .opblock-tag, .opblock-tag-section h3').allTextContents();
    const names = tags.map((text) => text.trim().split('\n')[0]!);
    assert.ok(names[0]?.startsWith('v1') && names[1]?.startsWith('v2') && names[2]?.startsWith('health'), names.join(' | '));
    assert.ok(names[3]?.startsWith('headers only (HEAD)') && names[4]?.startsWith('CORS preflight (OPTIONS)'), names.join(' | '));
    for (const refused of ['put', 'patch', 'delete', 'trace']) assert.equal(await page.locator(`.opblock-${refused}`).count(), 0, refused);
    assert.equal(await page.locator('.opblock-post').count(), 1);
    // The token is declared, so the reference offers to send it.
    assert.equal(await page.locator('.btn.authorize').count(), 1);

    const link = page.locator('.info a[href="/docs/API.md"]');
    assert.equal(await link.count(), 1);
    const contract = await page.request.get(`${server.url}/docs/API.md`);
    assert.equal(contract.status(), 200);
    assert.equal(await contract.text(), CONTRACT);
    await page.close();
  });
});
