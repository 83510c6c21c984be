import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachStore, type StoreTestContext } from '../helpers/each-store.js';
import { send } from '../helpers/http.js';
import { SEARCH_BOUND_TERMS, searchBoundCatalogue } from '../helpers/products.js';

interface PageItem {
  name: string;
  price: string;
  barcode: string;
}

/**
 * Loads the bound catalogue into the block's server before its tests: its listing's address, its
 * products in pk order as pages show them, and the matches of a term among them.
 */
function loadedBefore(ctx: StoreTestContext) {
  const loaded = {
    v2: '',
    items: [] as PageItem[],
    matching: (term: string): PageItem[] => loaded.items.filter((item) => item.name.toLowerCase().includes(term)),
  };
  before(async () => {
    const products = searchBoundCatalogue();
    await ctx.server.store.insertProducts((async function* () {
      yield products;
    })());
    loaded.v2 = `${ctx.server.url}/api/v2/shop/products`;
    loaded.items = products.map((p) => ({ name: p.name, price: '1.00', barcode: p.barcode }));
  });
  return loaded;
}

async function body(url: string): Promise<unknown> {
  const res = await send(url);
  assert.equal(res.status, 200, `${url}: ${res.text}`);
  return res.json;
}

describeEachStore('a search counted to 1,000, limit and offset', (ctx) => {
  const bound = loadedBefore(ctx);
  const { matching } = bound;

  it('counts exactly up to 1,000 matches and says "1000, not exact" past them, with next while a match follows', async () => {
    for (const [term, matches] of SEARCH_BOUND_TERMS) {
      const found = matching(term);
      assert.equal(found.length, matches);
      for (const [offset, limit] of [[0, 10], [990, 10], [995, 10], [1_000, 10], [0, 1_000], [1_500, 100]] as const) {
        const link = (at: number | undefined) => `${bound.v2}?limit=${limit}${at === undefined ? '' : `&offset=${at}`}&search=${term}`;
        assert.deepEqual(
          await body(`${bound.v2}?search=${term}&limit=${limit}&offset=${offset}`),
          {
            count: Math.min(matches, 1_000),
            count_exact: matches <= 1_000,
            next: offset + limit < matches ? link(offset + limit) : null,
            previous: offset === 0 ? null : link(offset - limit <= 0 ? undefined : offset - limit),
            results: found.slice(offset, offset + limit),
          },
          `${term} at ${offset}, ${limit}`,
        );
      }
    }
  });

  it('answers the page across the bound in full: the 1,001st match is on it, and no next after it', async () => {
    assert.deepEqual(await body(`${bound.v2}?search=ALPHA&limit=2&offset=999`), {
      count: 1_000,
      count_exact: false,
      next: null,
      previous: `${bound.v2}?limit=2&offset=997&search=ALPHA`,
      results: [matching('alpha')[999], matching('alpha')[1_000]],
    });
    assert.deepEqual(await body(`${bound.v2}?search=ALPHA&limit=2&offset=998`), {
      count: 1_000,
      count_exact: false,
      next: `${bound.v2}?limit=2&offset=1000&search=ALPHA`,
      previous: `${bound.v2}?limit=2&offset=996&search=ALPHA`,
      results: [matching('alpha')[998], matching('alpha')[999]],
    });
    assert.deepEqual(await body(`${bound.v2}?search=ALPHA&limit=2&offset=1001`), {
      count: 1_000,
      count_exact: false,
      next: null,
      previous: `${bound.v2}?limit=2&offset=999&search=ALPHA`,
      results: [],
    });
  });

  it('follows next from the first page to the last match, past 1,000, visiting each once', async () => {
    const seen: PageItem[] = [];
    for (let url: string | null = `${bound.v2}?search=lp&limit=300`; url !== null; ) {
      const page = (await body(url)) as { count: number; count_exact: boolean; next: string | null; results: PageItem[] };
      assert.deepEqual([page.count, page.count_exact], [1_000, false]);
      seen.push(...page.results);
      url = page.next;
    }
    assert.deepEqual(seen, matching('alpha'));
  });

  it('leaves count_exact out without a search, and keeps the count exact: the catalogue, a barcode', async () => {
    assert.deepEqual(await body(`${bound.v2}?limit=1&offset=1002`), { count: 1_003, next: null, previous: `${bound.v2}?limit=1&offset=1001`, results: [bound.items[1_002]] });
    assert.deepEqual(await body(`${bound.v2}?barcode=${bound.items[5]!.barcode}`), { count: 1, next: null, previous: null, results: [bound.items[5]] });
    // With a barcode and a search, the search is given: the page says whether its count is exact.
    assert.deepEqual(await body(`${bound.v2}?barcode=${bound.items[5]!.barcode}&search=alpha`), { count: 1, count_exact: true, next: null, previous: null, results: [bound.items[5]] });
  });

  it('keeps the v1 list whole: every match, past 1,000', async () => {
    const res = await send(`${ctx.server.url}/api/v1/shop/products?search=alpha`);
    assert.equal(res.status, 200);
    assert.deepEqual((res.json as Array<{ name: string }>).map((p) => p.name), matching('alpha').map((p) => p.name));
  });
});

describeEachStore('a search counted to 1,000, page numbers', { env: { PAGINATION: 'page-number' } }, (ctx) => {
  const bound = loadedBefore(ctx);
  const { matching } = bound;

  it('pages past page 100 while matches follow, and names the last page in a 404 only where the count is exact', async () => {
    for (const [term, matches] of SEARCH_BOUND_TERMS) {
      const found = matching(term);
      const pageLink = (page: number) => `${bound.v2}?${page === 1 ? '' : `page=${page}&`}search=${term}`;
      for (const page of [1, 100, 101]) {
        const results = found.slice((page - 1) * 10, page * 10);
        if (results.length === 0) continue;
        assert.deepEqual(
          await body(`${bound.v2}?search=${term}&page=${page}`),
          {
            count: Math.min(matches, 1_000),
            count_exact: matches <= 1_000,
            next: page * 10 < matches ? pageLink(page + 1) : null,
            previous: page === 1 ? null : pageLink(page - 1),
            results,
          },
          `${term}, page ${page}`,
        );
      }
    }
    const missing = async (url: string) => {
      const res = await send(url);
      assert.equal(res.status, 404, `${url}: ${res.text}`);
      return res.json;
    };
    assert.deepEqual(await missing(`${bound.v2}?search=gamma&page=101`), { type: 'about:blank', title: 'Not Found', status: 404, detail: 'Page 101 does not exist; the last page is 100.' });
    assert.deepEqual(await missing(`${bound.v2}?search=et&page=101`), { type: 'about:blank', title: 'Not Found', status: 404, detail: 'Page 101 does not exist; the last page is 100.' });
    for (const term of ['alpha', 'lp']) {
      assert.deepEqual(await missing(`${bound.v2}?search=${term}&page=102`), {
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: 'Page 102 does not exist; more than 1,000 products match, too few to reach it.',
      });
    }
    assert.deepEqual(await body(`${bound.v2}?search=nothing`), { count: 0, count_exact: true, next: null, previous: null, results: [] });
  });

  it('finds the last page by counting every match, and keeps the envelope counted to 1,000', async () => {
    assert.deepEqual(await body(`${bound.v2}?search=alpha&page=last`), {
      count: 1_000,
      count_exact: false,
      next: null,
      previous: `${bound.v2}?page=100&search=alpha`,
      results: [matching('alpha')[1_000]],
    });
    assert.deepEqual(await body(`${bound.v2}?search=beta&page=last`), {
      count: 1_000,
      count_exact: true,
      next: null,
      previous: `${bound.v2}?page=99&search=beta`,
      results: matching('beta').slice(990),
    });
  });
});
