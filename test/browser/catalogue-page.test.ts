import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserSkip, launchChromium, SCREENSHOTS } from '../helpers/browser.js';
import { ensureBuild } from '../helpers/build.js';
import { postJson } from '../helpers/http.js';
import { countAll, createProduct, listAll, searchBoundCatalogue, uniqueBarcode } from '../helpers/products.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { sqlite } from '../helpers/stores.js';

const GOODS: ReadonlyArray<readonly [string, string]> = [
  ['Espresso beans 1 kg', '18.90'], ['Oat milk 1 l', '2.49'], ['Sourdough loaf', '4.20'], ['Free-range eggs, 10', '3.95'],
  ['Greek yoghurt 500 g', '2.79'], ['Extra virgin olive oil 750 ml', '11.50'], ['Basmati rice 2 kg', '6.40'], ['Dark chocolate 70 %', '2.25'],
  ['Green tea, 40 bags', '4.10'], ['Cheddar, mature 400 g', '5.60'], ['Spaghetti 500 g', '1.35'], ['Tinned tomatoes 400 g', '0.89'],
  ['Honey, wildflower 350 g', '7.80'], ['Butter, salted 250 g', '2.95'], ['Apples, Braeburn 1 kg', '2.60'], ['Bananas, bunch', '1.45'],
  ['Peanut butter 340 g', '3.40'], ['Rolled oats 1 kg', '1.99'], ['Washing-up liquid 500 ml', '1.75'], ['Kitchen roll, 2 rolls', '2.10'],
  ['Sparkling water 6 × 1.5 l', '3.30'], ['Orange juice 1 l', '2.35'], ['Sea salt 250 g', '1.20'],
];

/** Each pagination style with a page size that makes three pages of the seeded goods. */
const STYLES = [
  { pagination: 'limit-offset', env: { PAGINATION: 'limit-offset', PAGE_SIZE: '5' }, seeded: 12, pageSize: 5 },
  { pagination: 'page-number', env: { PAGINATION: 'page-number' }, seeded: 23, pageSize: 10 },
] as const;

// One suite around them all, so that a machine without Chromium skips them with one line.
describe('the catalogue in Chromium', { skip: browserSkip }, () => {
  let browser: Browser;
  before(async () => {
    await ensureBuild();
    browser = await launchChromium();
  });
  after(async () => browser?.close());

  for (const style of STYLES) {
    describe(`the catalogue page (${style.pagination})`, () => {
      let server: RunningServer;
      let context: BrowserContext;
      const foreignRequests: string[] = [];
      const pageFailures: string[] = [];
      const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${style.pagination}-${name}.png`), fullPage: true });
      const openPage = async (): Promise<Page> => {
        const page = await context.newPage();
        page.on('request', (request) => {
          if (!request.url().startsWith(server.url)) foreignRequests.push(request.url());
        });
        // The API's refusals are the page's to show; anything else the browser asks for must be there (an icon too).
        page.on('response', (response) => {
          if (response.status() >= 400 && !new URL(response.url()).pathname.startsWith('/api/')) pageFailures.push(`${response.status()} ${response.url()}`);
        });
        await page.goto(`${server.url}/`);
        await page.locator('#products tbody tr').first().waitFor();
        return page;
      };
      const rowNames = (page: Page) => page.locator('#products tbody tr td:first-child').allTextContents();
      const lastPages = Math.ceil(style.seeded / style.pageSize);

      before(async () => {
        server = await startFreshServer(sqlite, style.env);
        for (const [name, price] of GOODS.slice(0, style.seeded)) await createProduct(server.url, { name, price });
        context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
      });
      after(async () => {
        await context?.close();
        await server?.stop();
      });
      // Checked after every test of the page, whichever of them run.
      after(() => assert.deepEqual(foreignRequests, [], 'requests to another origin'));
      after(() => assert.deepEqual(pageFailures, [], 'requests of the page refused'));

      test('shows the first page, the count and where it is', async () => {
        const page = await openPage();
        assert.deepEqual(await rowNames(page), GOODS.slice(0, style.pageSize).map(([name]) => name));
        assert.equal(await page.locator('#count').textContent(), `${style.seeded} products`);
        assert.equal(await page.locator('#page-indicator').textContent(), `Page 1 of ${lastPages} · 1–${style.pageSize} of ${style.seeded}`);
        assert.equal(await page.locator('#previous').isDisabled(), true);
        // Its icon is in the page, so that a browser asks for no /favicon.ico (a 404 in its console).
        assert.match(await page.locator('link[rel=icon]').getAttribute('href') ?? '', /^data:image\/svg\+xml,/);
        await shot(page, '1-first-page');
        await page.close();
      });

      test('pages forward and back with the links the API returns, by mouse and keyboard', async () => {
        const page = await openPage();
        await page.locator('#next').click();
        await page.locator('#page-indicator', { hasText: 'Page 2' }).waitFor();
        assert.deepEqual(await rowNames(page), GOODS.slice(style.pageSize, 2 * style.pageSize).map(([name]) => name));
        await shot(page, '2-second-page');

        await page.locator('#next').focus();
        await page.keyboard.press('Enter');
        await page.locator('#page-indicator', { hasText: `Page ${lastPages}` }).waitFor();
        assert.equal(await page.locator('#page-indicator').textContent(), `Page ${lastPages} of ${lastPages} · ${(lastPages - 1) * style.pageSize + 1}–${style.seeded} of ${style.seeded}`);
        assert.deepEqual(await rowNames(page), GOODS.slice((lastPages - 1) * style.pageSize, style.seeded).map(([name]) => name));
        assert.equal(await page.locator('#next').isDisabled(), true);
        // The keyboard focus moves to the button that still works.
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'previous');

        await page.keyboard.press('Enter');
        await page.locator('#page-indicator', { hasText: 'Page 2' }).waitFor();
        await page.locator('#previous').click();
        await page.locator('#page-indicator', { hasText: 'Page 1' }).waitFor();
        assert.deepEqual(await rowNames(page), GOODS.slice(0, style.pageSize).map(([name]) => name));
        await page.close();
      });

      test('finds by part of a name or a scanned barcode, with the search in the address for reload and Back', async () => {
        const page = await openPage();
        const search = page.getByLabel('Find a product');
        await search.fill('OLIVE');
        await search.press('Enter');
        await page.locator('#count', { hasText: 'found' }).waitFor();
        assert.deepEqual(await rowNames(page), ['Extra virgin olive oil 750 ml']);
        assert.equal(await page.locator('#count').textContent(), '1 product found');
        assert.equal(new URL(page.url()).search, '?search=OLIVE');
        await shot(page, '5-search');

        await page.reload();
        await page.locator('#count', { hasText: 'found' }).waitFor();
        assert.deepEqual(await rowNames(page), ['Extra virgin olive oil 750 ml']);
        assert.equal(await search.inputValue(), 'OLIVE');

        const sourdough = (await listAll(server.url))[2]!;
        await search.fill(` ${sourdough.barcode} `);
        await page.getByRole('button', { name: 'Find' }).click();
        await page.waitForURL((url) => url.search === `?barcode=${sourdough.barcode}`);
        await page.locator('#products tbody tr td:first-child', { hasText: 'Sourdough loaf' }).waitFor();
        assert.deepEqual(await rowNames(page), ['Sourdough loaf']);

        await page.goBack();
        await page.locator('#products tbody tr td:first-child', { hasText: 'olive' }).waitFor();
        assert.equal(await search.inputValue(), 'OLIVE');

        // Matches over more than one page: the page is kept in the address too.
        const matches = GOODS.slice(0, style.seeded).filter(([name]) => name.toLowerCase().includes('e'));
        await search.fill('e');
        await search.press('Enter');
        await page.locator('#count', { hasText: `${matches.length} products found` }).waitFor();
        await page.locator('#next').click();
        await page.locator('#page-indicator', { hasText: 'Page 2' }).waitFor();
        const second = matches.slice(style.pageSize, 2 * style.pageSize).map(([name]) => name);
        assert.deepEqual(await rowNames(page), second);
        await page.reload();
        await page.locator('#page-indicator', { hasText: 'Page 2' }).waitFor();
        assert.deepEqual(await rowNames(page), second);

        await search.fill('no such thing');
        await search.press('Enter');
        await page.locator('#products td.empty', { hasText: 'No product matches' }).waitFor();
        await page.getByRole('button', { name: 'Show all' }).click();
        await page.locator('#count', { hasText: `${style.seeded} products` }).waitFor();
        assert.equal(new URL(page.url()).search, '');
        await page.close();
      });

      test('says "more than 1,000" where a search\'s count stops there, and pages past it', async () => {
        // A catalogue of its own: 1,001 names hold `alpha`, 1,000 `beta`.
        const many = await startFreshServer(sqlite, style.env);
        try {
          await many.store.insertProducts((async function* () {
            yield searchBoundCatalogue();
          })());
          const page = await context.newPage();
          await page.goto(`${many.url}/?search=alpha`);
          await page.locator('#count', { hasText: 'found' }).waitFor();
          assert.equal(await page.locator('#count').textContent(), 'more than 1,000 products found');
          assert.equal(await page.locator('#page-indicator').textContent(), `Page 1 · 1–${style.pageSize} of more than 1,000`);
          await shot(page, '6-search-more-than-1000');
          await page.locator('#next').click();
          await page.locator('#page-indicator', { hasText: 'Page 2' }).waitFor();
          assert.equal(await page.locator('#page-indicator').textContent(), `Page 2 · ${style.pageSize + 1}–${2 * style.pageSize} of more than 1,000`);
          // The last match, past 1,000: its page is there, and nothing follows it.
          await page.goto(`${many.url}/?search=alpha&${style.pagination === 'limit-offset' ? 'offset=1000' : 'page=last'}`);
          await page.locator('#page-indicator', { hasText: '1,001–1,001' }).waitFor();
          const lastPage = 1_000 / style.pageSize + 1;
          assert.equal(await page.locator('#page-indicator').textContent(), `Page ${lastPage} · 1,001–1,001 of more than 1,000`);
          assert.deepEqual(await rowNames(page), ['Alpha 1001']);
          assert.equal(await page.locator('#next').isDisabled(), true);
          // Exactly 1,000 matches are counted exactly.
          await page.getByLabel('Find a product').fill('beta');
          await page.getByLabel('Find a product').press('Enter');
          await page.locator('#page-indicator', { hasText: 'Page 1 of' }).waitFor();
          assert.equal(await page.locator('#count').textContent(), '1,000 products found');
          assert.equal(await page.locator('#page-indicator').textContent(), `Page 1 of ${1_000 / style.pageSize} · 1–${style.pageSize} of 1000`);
          await page.close();
        } finally {
          await many.stop();
        }
      });

      test('opens a product by its number, and says when there is none', async () => {
        const page = await openPage();
        await page.getByLabel('Product number').fill('3');
        await page.getByLabel('Product number').press('Enter');
        await page.locator('#detail:not([hidden])').waitFor();
        assert.equal(await page.locator('#detail-name').textContent(), GOODS[2]![0]);
        assert.equal(await page.locator('#detail-price').textContent(), GOODS[2]![1]);
        assert.equal(await page.locator('#detail-pk').textContent(), '3');
        await shot(page, '3-product-detail');

        await page.getByLabel('Product number').fill('999');
        await page.getByRole('button', { name: 'Open' }).click();
        await page.locator('#open-error', { hasText: 'There is no product number 999.' }).waitFor();
        assert.equal(await page.locator('#detail').isHidden(), true);
        await page.close();
      });

      test('adds a valid product, shows it and lists it', async () => {
        const page = await openPage();
        const count = await countAll(server.url);
        const barcode = uniqueBarcode();
        await page.getByLabel('Name').fill('Rye crispbread 250 g');
        await page.getByLabel('Barcode').fill(barcode);
        await page.getByLabel('Price').fill('2.4');
        await page.getByLabel('Price').press('Enter');
        await page.locator('#form-message.is-success').waitFor();
        const created = (await listAll(server.url)).find((product) => product.barcode === barcode);
        assert.equal(await page.locator('#form-message').textContent(), `Added “Rye crispbread 250 g” as product ${created?.pk}.`);
        assert.equal(await page.locator('#detail-price').textContent(), '2.40');
        assert.equal(await page.locator('#detail-barcode').textContent(), barcode);
        const added = page.locator('#products tbody tr.is-new');
        await added.waitFor();
        assert.deepEqual(await added.locator('td').allTextContents(), ['Rye crispbread 250 g', barcode, '2.40']);
        assert.equal(await page.locator('#count').textContent(), `${count + 1} products`);
        assert.equal(await page.getByLabel('Name').inputValue(), '', 'the form is ready for the next product');
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'name');
        await shot(page, '4-product-added');
        await page.close();
      });

      test("puts each field's message from the problem document next to its field", async () => {
        const page = await openPage();
        const count = await countAll(server.url);
        const entered = { name: '   ', barcode: '4006381333932', price: '12,50' };
        const expected = await postJson(`${server.url}/api/v1/shop/product/`, JSON.stringify(entered));
        const errors = (expected.json as { errors: Record<string, string[]> }).errors;
        assert.deepEqual(Object.keys(errors).sort(), ['barcode', 'name', 'price']);

        await page.getByLabel('Name').fill(entered.name);
        await page.getByLabel('Barcode').fill(entered.barcode);
        await page.getByLabel('Price').fill(entered.price);
        await page.getByRole('button', { name: 'Add product' }).click();
        await page.locator('#form-message.is-error').waitFor();
        for (const field of ['name', 'barcode', 'price']) {
          assert.equal(await page.locator(`#${field}-error`).textContent(), errors[field]!.join(' '), field);
          assert.equal(await page.locator(`#${field}`).getAttribute('aria-invalid'), 'true', field);
        }
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'name', 'the first wrong field has the focus');
        assert.equal(await page.locator('#count').textContent(), `${count} products`);
        await shot(page, '5-invalid-product');
        await page.close();
      });

      test('says so when the barcode is already in the catalogue', async () => {
        const page = await openPage();
        const [, price] = GOODS[0]!;
        const existing = await createProduct(server.url, { name: 'Filter coffee 500 g', price });
        await page.getByLabel('Name').fill('Another coffee');
        await page.getByLabel('Barcode').fill(existing.barcode);
        await page.getByLabel('Price').fill('5.00');
        await page.getByRole('button', { name: 'Add product' }).click();
        await page.locator('#form-message.is-error').waitFor();
        assert.match(String(await page.locator('#form-message').textContent()), /barcode already exists/);
        assert.equal(await page.locator('#barcode-error').textContent(), 'A product with this barcode is already in the catalogue.');
        await shot(page, '6-duplicate-barcode');
        await page.close();
      });

      test('fits a phone screen without sideways scrolling', async () => {
        const phone = await browser.newContext({ viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
        try {
          const page = await phone.newPage();
          await page.goto(`${server.url}/`);
          await page.locator('#products tbody tr').first().waitFor();
          assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal scroll');
          await shot(page, '7-phone');
        } finally {
          await phone.close();
        }
      });

    });
  }

  describe('an empty catalogue', () => {
    test('says there is nothing yet and points to the form', async () => {
      const server = await startFreshServer(sqlite, { PAGINATION: 'page-number' });
      const context = await browser.newContext({ viewport: { width: 1180, height: 700 } });
      try {
        const page = await context.newPage();
        await page.goto(`${server.url}/`);
        await page.locator('#products td.empty').waitFor();
        assert.equal(await page.locator('#products td.empty').textContent(), 'No products yet. Add the first one with the form.');
        assert.equal(await page.locator('#count').textContent(), '0 products');
        assert.equal(await page.locator('#page-indicator').textContent(), 'Nothing to show');
        assert.equal(await page.locator('#next').isDisabled(), true);
        await page.screenshot({ path: join(SCREENSHOTS, 'empty-catalogue.png') });
      } finally {
        await context.close();
        await server.stop();
      }
    });
  });

  describe('filters the API refuses', () => {
    let server: RunningServer;
    let context: BrowserContext;
    const confetti = `Confetti ${'🎉'.repeat(100)}`;
    const rowNames = (page: Page) => page.locator('#products tbody tr td:first-child').allTextContents();
    const open = async (address: string): Promise<Page> => {
      const page = await context.newPage();
      await page.goto(`${server.url}${address}`);
      await page.locator('#products tbody tr').first().waitFor();
      return page;
    };
    /** Nothing of an earlier listing is shown, and the pager has nowhere to go. */
    const assertNothingListed = async (page: Page, why: string): Promise<void> => {
      assert.deepEqual(await rowNames(page), ['No products to show.'], why);
      assert.equal(await page.locator('#count').textContent(), '', why);
      assert.equal(await page.locator('#page-indicator').textContent(), 'Nothing to show', why);
      assert.equal(await page.locator('#previous').isDisabled(), true, why);
      assert.equal(await page.locator('#next').isDisabled(), true, why);
    };

    before(async () => {
      server = await startFreshServer(sqlite, { PAGINATION: 'limit-offset', PAGE_SIZE: '5' });
      for (const [name, price] of GOODS.slice(0, 7)) await createProduct(server.url, { name, price });
      await createProduct(server.url, { name: confetti, price: '3.00' });
      context = await browser.newContext({ viewport: { width: 1180, height: 820 } });
    });
    after(async () => {
      await context?.close();
      await server?.stop();
    });

    test('a scanned barcode with a wrong check digit leaves no stale rows, and reload asks for it again', async () => {
      const page = await open('/');
      const search = page.getByLabel('Find a product');
      const sourdough = (await listAll(server.url))[2]!;
      await search.fill(sourdough.barcode);
      await search.press('Enter');
      await page.waitForURL((url) => url.search === `?barcode=${sourdough.barcode}`);
      await page.locator('#products tbody tr td:first-child', { hasText: 'Sourdough loaf' }).waitFor();

      const wrong = `${sourdough.barcode.slice(0, 12)}${(Number(sourdough.barcode[12]) + 1) % 10}`;
      await search.fill(wrong);
      await search.press('Enter');
      await page.locator('#search-error', { hasText: 'check digit is wrong' }).waitFor();
      await assertNothingListed(page, 'after the refused barcode');
      assert.equal(new URL(page.url()).search, `?barcode=${wrong}`);
      assert.equal(await search.getAttribute('aria-invalid'), 'true');

      await page.reload();
      await page.locator('#search-error', { hasText: 'check digit is wrong' }).waitFor();
      await assertNothingListed(page, 'after reload');
      assert.equal(await search.inputValue(), wrong);

      await page.goBack();
      await page.locator('#products tbody tr td:first-child', { hasText: 'Sourdough loaf' }).waitFor();
      assert.equal(await page.locator('#search-error').textContent(), '');
      await page.close();
    });

    test('an address with a refused filter or page shows the problem and settles the pager', async () => {
      for (const [address, where] of [['/?barcode=4006381333930', '#search-error'], ['/?search=%00', '#search-error'], ['/?limit=0', '#list-message']] as const) {
        const page = await context.newPage();
        await page.goto(`${server.url}${address}`);
        await page.locator(`${where}:not(:empty)`).waitFor();
        await assertNothingListed(page, address);
        if (where === '#list-message') assert.match(String(await page.locator(where).textContent()), /^limit: /);
        await page.close();
      }
    });

    test('a search of 100 characters counts them as the API does, emoji included; a longer one is refused whole', async () => {
      const page = await open('/');
      const search = page.getByLabel('Find a product');
      const hundred = '🎉'.repeat(100);
      await search.fill(hundred);
      await search.press('Enter');
      await page.locator('#count', { hasText: '1 product found' }).waitFor();
      assert.deepEqual(await rowNames(page), [confetti]);
      assert.equal(new URL(page.url()).searchParams.get('search'), hundred);

      await search.fill(`${hundred}🎉`);
      await search.press('Enter');
      await page.locator('#search-error', { hasText: 'search is at most 100 characters; got 101.' }).waitFor();
      assert.equal(await search.inputValue(), `${hundred}🎉`, 'nothing typed is cut');
      await assertNothingListed(page, 'after the long search');
      // The old search left the address, and the refused text was not put into it.
      assert.equal(new URL(page.url()).search, '');
      await page.close();
    });
  });

  describe('the API reference', () => {
    test('renders at /docs from the service alone', async () => {
      const server = await startFreshServer(sqlite);
      const context = await browser.newContext({ viewport: { width: 1180, height: 900 } });
      const foreign: string[] = [];
      try {
        const page = await context.newPage();
        page.on('request', (request) => {
          if (!request.url().startsWith(server.url)) foreign.push(request.url());
        });
        await page.goto(`${server.url}/docs`);
        await page.locator('.opblock-summary-path', { hasText: '/api/v1/shop/product/' }).first().waitFor();
        assert.match(String(await page.locator('.info .title').textContent()), /Product catalogue/);
        await page.screenshot({ path: join(SCREENSHOTS, 'api-reference.png') });
        assert.deepEqual(foreign, []);
      } finally {
        await context.close();
        await server.stop();
      }
    });
  });
});
