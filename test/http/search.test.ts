import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { describeEachStore } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { createProduct, uniqueBarcode } from '../helpers/products.js';
import { startServer } from '../helpers/server.js';

interface Item {
  pk: number;
  name: string;
  barcode: string;
  price: string;
}

interface Page {
  count: number;
  next: string | null;
  previous: string | null;
  results: Array<{ name: string; price: string; barcode: string }>;
}

/** The catalogue every test here searches; pks follow this order. */
const NAMES = [
  'Crème brûlée',
  'ÄPFEL aus Südtirol',
  'Espresso 1 kg',
  '100% pure juice',
  'snake_case tea',
  '寿司セット',
  'Party pack 🎉🍕',
  'Creme fraiche',
  'Straße & Söhne',
  'Ouzo Ελληνικό',
];
const UPC_A = '036000291452';

const pageItem = (p: Item) => ({ name: p.name, price: p.price, barcode: p.barcode });

async function json<T>(url: string): Promise<T> {
  const res = await send(url);
  assert.equal(res.status, 200, `${url}: ${res.text}`);
  return res.json as T;
}

async function refused(url: string, parameters: string[]) {
  const res = await send(url);
  assert.equal(res.status, 400, `${url}: ${res.text}`);
  assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  assert.deepEqual(Object.keys((res.json as { errors: object }).errors).sort(), parameters, url);
}

const encode = (text: string) => encodeURIComponent(text);

describeEachStore('finding products', { env: { PAGE_SIZE: '2' } }, (ctx) => {
  let v1: string;
  let v2: string;
  let items: Item[];
  const search = (term: string) => json<Item[]>(`${v1}?search=${encode(term)}`);
  const names = async (term: string) => (await search(term)).map((p) => p.name);

  before(async () => {
    v1 = `${ctx.server.url}/api/v1/shop/products`;
    v2 = `${ctx.server.url}/api/v2/shop/products`;
    items = [];
    for (const name of NAMES) items.push(await createProduct(ctx.server.url, { name }));
    items.push(await createProduct(ctx.server.url, { name: 'Cola can', barcode: `0${UPC_A}` }));
  });

  it('finds the product with exactly this barcode, and none for an unknown one', async () => {
    const target = items[2]!;
    assert.deepEqual(await json(`${v1}?barcode=${target.barcode}`), [target]);
    assert.deepEqual(await json(`${v1}?barcode=4006381333931`), []);
    assert.deepEqual(await json(`${v2}?barcode=${target.barcode}`), { count: 1, next: null, previous: null, results: [pageItem(target)] });
    assert.deepEqual(await json(`${v2}?barcode=4006381333931`), { count: 0, next: null, previous: null, results: [] });
  });

  it('reads a 12-digit UPC-A as the EAN-13 of 0 and its digits', async () => {
    assert.deepEqual(await json(`${v1}?barcode=${UPC_A}`), [items[10]]);
    assert.deepEqual(await json(`${v1}?barcode=0${UPC_A}`), [items[10]]);
  });

  it('trims white space around both filters', async () => {
    assert.deepEqual(await json(`${v1}?barcode=%20${items[3]!.barcode}%20`), [items[3]]);
    assert.deepEqual(await json(`${v1}?search=%20%20espresso%09`), [items[2]]);
  });

  it('refuses every kind of bad barcode, naming the parameter', async () => {
    for (const bad of ['', '%20', 'abc', '400638133393X', '40063813339', '40063813339311', '4006381333932', '036000291453', '+400638133393']) {
      await refused(`${v1}?barcode=${bad}`, ['barcode']);
      await refused(`${v2}?barcode=${bad}`, ['barcode']);
    }
  });

  it('refuses a filter whose percent-encoding is broken or is not UTF-8, naming it, and takes an encoded U+FFFD as written', async () => {
    for (const [query, named] of [['search=%ff', 'search'], ['search=%zz', 'search'], ['search=ab%e2%82', 'search'], ['barcode=%ff', 'barcode'], ['search=%ff&barcode=%zz', 'barcode,search'], ['__proto__=%ff', '__proto__']] as const) {
      await refused(`${v1}?${query}`, named.split(','));
      await refused(`${v2}?${query}`, named.split(','));
    }
    const broken = 'is not valid percent-encoding of UTF-8 text (a `%` not followed by two hex digits, or bytes that are not UTF-8).';
    assert.deepEqual((await send(`${v2}?search=%ff`)).json, { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'The query parameters are not valid.', errors: { search: [`The value ${broken}`] } });
    assert.deepEqual(((await send(`${v2}?%ff=1`)).json as { errors: unknown }).errors, { '%ff': [`The parameter's name ${broken}`] });
    assert.deepEqual(await json(`${v1}?search=%EF%BF%BD`), []);
    assert.deepEqual(await json(`${v1}?search=cr%C3%A8me`), [items[0], items[7]]);
  });

  it('counts an empty search as absent and refuses one over 100 characters', async () => {
    assert.equal((await json<Item[]>(`${v1}?search=`)).length, items.length);
    assert.equal((await json<Item[]>(`${v1}?search=%20%20`)).length, items.length);
    assert.deepEqual(await json(`${v1}?search=${'x'.repeat(100)}`), []);
    assert.deepEqual(await json(`${v1}?search=${'🍕'.repeat(100)}`), []);
    await refused(`${v1}?search=${'x'.repeat(101)}`, ['search']);
    await refused(`${v2}?search=${'x'.repeat(101)}`, ['search']);
    await refused(`${v1}?search=a%00b`, ['search']);
  });

  it('refuses a filter given twice, and reports bad paging and filters together', async () => {
    await refused(`${v1}?search=tea&search=tea`, ['search']);
    await refused(`${v1}?barcode=${items[0]!.barcode}&barcode=${items[0]!.barcode}`, ['barcode']);
    await refused(`${v2}?search=tea&search=kg`, ['search']);
    await refused(`${v2}?limit=0&barcode=1`, ['barcode', 'limit']);
  });

  it('ignores case and accents on both sides', async () => {
    assert.deepEqual(await names('creme'), ['Crème brûlée', 'Creme fraiche']);
    assert.deepEqual(await names('CRÈME'), ['Crème brûlée', 'Creme fraiche']);
    assert.deepEqual(await names('apfel'), ['ÄPFEL aus Südtirol']);
    assert.deepEqual(await names('sudtirol'), ['ÄPFEL aus Südtirol']);
    assert.deepEqual(await names('brulee'), ['Crème brûlée']);
    // Combining marks sent decomposed fold like precomposed ones.
    assert.deepEqual(await names('bru\u0302le\u0301e'), ['Crème brûlée']);
    assert.deepEqual(await names('STRASSE'), []);
    assert.deepEqual(await names('straße'), ['Straße & Söhne']);
  });

  it('finds names in other scripts, emoji included, with short and long terms', async () => {
    assert.deepEqual(await names('寿司'), ['寿司セット']);
    assert.deepEqual(await names('司セット'), ['寿司セット']);
    assert.deepEqual(await names('🍕'), ['Party pack 🎉🍕']);
    assert.deepEqual(await names('🎉🍕'), ['Party pack 🎉🍕']);
    assert.deepEqual(await names('ελληνικο'), ['Ouzo Ελληνικό']);
  });

  it('takes % and _ literally, never as wildcards', async () => {
    assert.deepEqual(await names('%'), ['100% pure juice']);
    assert.deepEqual(await names('0% p'), ['100% pure juice']);
    assert.deepEqual(await names('_'), ['snake_case tea']);
    assert.deepEqual(await names('e_c'), ['snake_case tea']);
    assert.deepEqual(await names('%%'), []);
    assert.deepEqual(await names('e%c'), []);
    assert.deepEqual(await names('s_o'), []);
    assert.deepEqual(await names('"'), []);
    assert.deepEqual(await names('a"b'), []);
    assert.deepEqual(await names('\\'), []);
  });

  it('answers matches in pk order, for one and two characters as for longer terms', async () => {
    const expect = (term: string) => items.filter((p) => p.name.toLowerCase().normalize('NFD').replace(/\p{M}/gu, '').includes(term));
    for (const term of ['e', 'r', 'ea', 'cre', 'tea', 'e f']) assert.deepEqual(await search(term), expect(term), term);
  });

  it('needs both filters to match when both are given', async () => {
    const target = items[0]!;
    assert.deepEqual(await json(`${v1}?barcode=${target.barcode}&search=BRULEE`), [target]);
    assert.deepEqual(await json(`${v1}?barcode=${target.barcode}&search=e`), [target]);
    assert.deepEqual(await json(`${v1}?barcode=${target.barcode}&search=espresso`), []);
    assert.deepEqual(await json(`${v2}?barcode=${target.barcode}&search=tea`), { count: 0, count_exact: true, next: null, previous: null, results: [] });
  });

  it('counts matches and keeps the filters in the links, visiting each match once', async () => {
    const matches = items.filter((p) => /e/.test(p.name.toLowerCase().normalize('NFD').replace(/\p{M}/gu, '')));
    let url: string | null = `${v2}?search=E`;
    const seen: Page['results'] = [];
    let pages = 0;
    while (url !== null) {
      const page: Page = await json<Page>(url);
      assert.equal(page.count, matches.length);
      if (page.next !== null) assert.match(page.next, /[?&]search=E(&|$)/);
      if (page.previous !== null) assert.match(page.previous, /[?&]search=E(&|$)/);
      seen.push(...page.results);
      url = page.next;
      pages += 1;
    }
    assert.deepEqual(seen, matches.map(pageItem));
    assert.equal(pages, Math.ceil(matches.length / 2));
    const second = await json<Page>(`${v2}?search=E&limit=2&offset=2`);
    assert.equal(second.previous, `${v2}?limit=2&search=E`);
  });

  it('answers HEAD like GET, without a body, and refuses a bad filter on HEAD too', async () => {
    for (const url of [`${v1}?search=tea`, `${v2}?search=tea`]) {
      const res = await send(url, { method: 'HEAD' });
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
    }
    assert.equal((await send(`${v1}?barcode=1`, { method: 'HEAD' })).status, 400);
  });

  it('stores the folded name with every product it writes, so no search has names to fold first', async () => {
    // Concurrent creates, so that PostgreSQL's grouped insert writes several in one statement.
    await Promise.all(['Birnen Dicksaft', 'Äpfel Mus', 'Crème Anglaise'].map((name) => createProduct(ctx.server.url, { name })));
    await ctx.server.store.insertProducts((async function* () {
      yield [{ name: 'Hagebutten Tee', barcode: uniqueBarcode(), priceCents: 120 }];
    })());
    await ctx.server.store.applyPriceList((async function* () {
      yield [{ name: 'Melissen Tee', barcode: uniqueBarcode(), priceCents: 130 }];
    })());
    const unfolded = await outsideSql<{ n: number | string }>(ctx.server.location, 'SELECT count(*) AS n FROM product WHERE name_folded IS NULL');
    assert.equal(Number(unfolded[0]?.n), 0);
  });

  it('finds a created product at once, and a renamed or imported one by its new name only', async () => {
    const created = await createProduct(ctx.server.url, { name: 'Zwetschgen Röster' });
    assert.deepEqual(await search('rOSTer'), [created]);
    const renamed = { name: 'Quitten Gelée', barcode: created.barcode, priceCents: 250 };
    const added = { name: 'Mirabellen Gelée', barcode: uniqueBarcode(), priceCents: 300 };
    await ctx.server.store.applyPriceList((async function* () {
      yield [renamed, added];
    })());
    assert.deepEqual(await names('roster'), []);
    assert.deepEqual(await names('gelee'), ['Quitten Gelée', 'Mirabellen Gelée']);
    const imported = { name: 'Holunder Sirup', barcode: uniqueBarcode(), priceCents: 400 };
    await ctx.server.store.insertProducts((async function* () {
      yield [imported];
    })());
    assert.deepEqual(await names('HOLUNDER'), ['Holunder Sirup']);
  });

  it('finds rows that plain SQL wrote or renamed', async () => {
    const barcode = uniqueBarcode();
    await outsideSql(ctx.server.location, 'INSERT INTO product (name, barcode, price_cents) VALUES ($1, $2, $3)', ['Wildkräuter Honig', barcode, 990]);
    assert.deepEqual(await names('krauter'), ['Wildkräuter Honig']);
    await outsideSql(ctx.server.location, 'UPDATE product SET name = $1 WHERE barcode = $2', ['Waldblüten Honig', barcode]);
    assert.deepEqual(await names('krauter'), []);
    assert.deepEqual(await names('BLUTEN'), ['Waldblüten Honig']);
    // A change of case only keeps the same folded text: still found.
    await outsideSql(ctx.server.location, 'UPDATE product SET name = $1 WHERE barcode = $2', ['WALDBLÜTEN HONIG', barcode]);
    assert.deepEqual(await names('bluten'), ['WALDBLÜTEN HONIG']);
  });
});

describeEachStore('finding products, page-number style', { env: { PAGINATION: 'page-number' } }, (ctx) => {
  let v2: string;
  before(async () => {
    v2 = `${ctx.server.url}/api/v2/shop/products`;
    for (let i = 1; i <= 23; i++) await createProduct(ctx.server.url, { name: i % 2 === 0 ? `Käse ${i}` : `Brot ${i}` });
  });

  it('pages the matches, keeps the filter in the links and 404s past the last match', async () => {
    const first = await json<Page>(`${v2}?search=kase`);
    assert.equal(first.count, 11);
    assert.equal(first.next, `${v2}?page=2&search=kase`);
    assert.deepEqual(first.results.map((r) => r.name), [2, 4, 6, 8, 10, 12, 14, 16, 18, 20].map((i) => `Käse ${i}`));
    const last = await json<Page>(`${v2}?search=kase&page=last`);
    assert.deepEqual(last.results.map((r) => r.name), ['Käse 22']);
    assert.equal(last.previous, `${v2}?search=kase`);
    assert.deepEqual(await json<Page>(`${v2}?search=kase&page=2`), last);
    const past = await send(`${v2}?search=kase&page=3`);
    assert.equal(past.status, 404, past.text);
    assert.equal((past.json as { detail: string }).detail, 'Page 3 does not exist; the last page is 2.');
    assert.deepEqual(await json(`${v2}?search=nothing`), { count: 0, count_exact: true, next: null, previous: null, results: [] });
    assert.equal((await send(`${v2}?search=nothing&page=2`)).status, 404);
  });
});

describeEachStore('the search index across a restart', { env: false }, (ctx) => {
  it('answers the same after the service restarts over the same database', async (t) => {
    const { location } = await ctx.freshDatabase(t);
    let server = await startServer(location);
    const created = await createProduct(server.url, { name: 'Gruyère Réserve' });
    await server.stop();
    server = await startServer(location);
    try {
      assert.deepEqual(await json(`${server.url}/api/v1/shop/products?search=gruyere`), [created]);
      assert.deepEqual(await json(`${server.url}/api/v1/shop/products?search=reserve`), [created]);
    } finally {
      await server.stop();
    }
  });
});

describeEachStore('search finds any part of any name', (ctx) => {
  it('finds the product for random names and random parts of them', async () => {
    // Letters with and without accents (precomposed and combining), other scripts, emoji, the
    // characters SQL patterns treat specially, quotes and spaces.
    const alphabet = [...'aAbBeEéÉèöÖçñßøå', 'e\u0301', 'o\u0308', ...'寿司日本語한국어Ωλ', '🍕', '🎉', ...'%_\\"\' 019-q'];
    const char = fc.constantFrom(...alphabet);
    const name = fc.array(char, { minLength: 1, maxLength: 24 }).map((chars) => chars.join('').trim()).filter((text) => text.length > 0);
    await fc.assert(
      fc.asyncProperty(name, fc.nat(), fc.nat(), async (text, a, b) => {
        const product = await createProduct(ctx.server.url, { name: text });
        const points = [...product.name];
        const start = a % points.length;
        const end = start + 1 + (b % (points.length - start));
        const term = points.slice(start, end).join('');
        const found = await json<Item[]>(`${ctx.server.url}/api/v1/shop/products?search=${encode(term)}`);
        assert.ok(term.trim() === '' || found.some((p) => p.pk === product.pk), `${JSON.stringify(term)} in ${JSON.stringify(product.name)}`);
      }),
      { numRuns: 60 },
    );
  });
});
