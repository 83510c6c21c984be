/// <reference lib="dom" />
// The catalogue page: one ES module with no imports, so the browser loads tsc's output as it is.

// Types only, erased from the output: the answers' shapes as the service declares them.
import type { Problem } from '../http/contract/problem.js';
import type { PageItemWire as PageItem, PageWire as Page, ProductWire as Product } from '../http/contract/schemas.js';

const FIRST_PAGE = '/api/v2/shop/products';
const CREATE = '/api/v1/shop/product/';
// Written out, since the page imports no values; checked against the wire type, so a renamed field fails to compile.
const FIELDS = ['name', 'barcode', 'price'] as const satisfies ReadonlyArray<keyof Product>;
/**
 * The longest search the API accepts, in characters (code points) after trimming, as the API counts
 * it: not an input's maxlength, which counts UTF-16 units and would cut a search of emoji in half.
 */
const MAX_SEARCH_LENGTH = 100;
/** Page-number style's fixed page size, as the API documents it. */
const PAGE_NUMBER_SIZE = 10;

function byId<T extends HTMLElement>(id: string, type: { new (): T }): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`The page has no ${type.name} #${id}.`);
  return element;
}

const ui = {
  count: byId('count', HTMLElement),
  listMessage: byId('list-message', HTMLElement),
  rows: byId('products', HTMLTableElement).tBodies[0]!,
  previous: byId('previous', HTMLButtonElement),
  next: byId('next', HTMLButtonElement),
  indicator: byId('page-indicator', HTMLElement),
  addForm: byId('add-form', HTMLFormElement),
  formMessage: byId('form-message', HTMLElement),
  openForm: byId('open-form', HTMLFormElement),
  openPk: byId('open-pk', HTMLInputElement),
  openError: byId('open-error', HTMLElement),
  detail: byId('detail', HTMLElement),
  searchForm: byId('search-form', HTMLFormElement),
  search: byId('search', HTMLInputElement),
  searchError: byId('search-error', HTMLElement),
  searchClear: byId('search-clear', HTMLButtonElement),
};

/** The listing's parameters the page keeps in its own address, so that reload and Back show the same. */
const STATE_PARAMETERS = ['barcode', 'search', 'limit', 'offset', 'page'] as const;

/** The listing's address for the state in the page's own address (`?search=...&offset=...`). */
function listingFromLocation(): string {
  const own = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of STATE_PARAMETERS) {
    const value = own.get(name);
    if (value !== null && value !== '') params.set(name, value);
  }
  params.sort();
  const query = params.toString();
  return query === '' ? FIRST_PAGE : `${FIRST_PAGE}?${query}`;
}

/** Writes the listing's state into the page's address: a new history entry, so Back returns to it. */
function rememberListing(url: string): void {
  const query = new URL(url, location.href).search;
  if (query !== location.search) history.pushState(null, '', `${location.pathname}${query}`);
}

/** The filter the search box's text asks for: 12 or 13 digits are a scanned barcode, anything else a name. */
function filterOf(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return '';
  return /^[0-9]{12,13}$/.test(trimmed) ? `barcode=${trimmed}` : `search=${encodeURIComponent(trimmed)}`;
}

/** Puts the filter of the listing at `url` into the search box. */
function showFilter(url: string): void {
  const params = new URL(url, location.href).searchParams;
  ui.search.value = params.get('barcode') ?? params.get('search') ?? '';
  ui.searchClear.hidden = ui.search.value === '';
}

function isFiltered(): boolean {
  const params = new URL(view.url, location.href).searchParams;
  return params.has('barcode') || params.has('search');
}

/** What the table shows: the page's own address and the position of its first row in the catalogue. */
interface View {
  url: string;
  start: number;
  page: Page | undefined;
  /** Rows per full page, learnt from the first full page seen. */
  pageSize: number | undefined;
}

const view: View = { url: FIRST_PAGE, start: 0, page: undefined, pageSize: undefined };

async function readJson<T>(response: Response): Promise<T | undefined> {
  try {
    return (await response.json()) as T;
  } catch {
    return undefined;
  }
}

function problemText(problem: Problem | undefined, response: Response): string {
  return problem?.detail ?? `The service answered ${response.status} ${response.statusText}.`;
}

function showMessage(element: HTMLElement, text: string, kind: 'error' | 'success'): void {
  element.textContent = text;
  element.className = `message is-${kind}`;
  element.hidden = false;
}

function hideMessage(element: HTMLElement): void {
  element.hidden = true;
  element.textContent = '';
}

/** The first row's position on the page at `url`: from `offset`, or counted while paging. */
function startOf(url: string, page: Page, counted: number): number {
  const params = new URL(url, location.href).searchParams;
  const offset = params.get('offset');
  if (offset !== null && /^[0-9]+$/.test(offset)) return Number(offset);
  if (params.get('page') === 'last') {
    if (countIsExact(page)) return Math.max(0, page.count - page.results.length);
    // Counted only to 1,000: the page before names its place (page-number style has 10 a page).
    const before = page.previous === null ? undefined : new URL(page.previous).searchParams.get('page');
    return page.previous === null ? 0 : Number(before ?? '1') * PAGE_NUMBER_SIZE;
  }
  if (!params.has('page')) return 0;
  // A reload or Back lands on a page without having counted: a full page's size gives its place, and
  // the last page ends at the count.
  const number = params.get('page') ?? '';
  if (/^[0-9]+$/.test(number) && counted === 0) {
    return page.next === null ? Math.max(0, page.count - page.results.length) : (Number(number) - 1) * page.results.length;
  }
  return counted;
}

/**
 * Loads and shows the page at `url`. `counted` is the first row's position when the URL does not say.
 * Unless `remember` is false (the address already says it), the page's address follows, also when the
 * listing is refused: reload then asks for what was typed again instead of bringing back an old result.
 */
async function showPage(url: string, counted: number, highlight?: string, remember = true): Promise<boolean> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { Accept: 'application/json' } });
  } catch {
    showNoListing(url, remember);
    showMessage(ui.listMessage, 'The catalogue cannot be reached. Check the connection and try again.', 'error');
    return false;
  }
  if (!response.ok) {
    const problem = await readJson<Problem>(response);
    showNoListing(url, remember);
    const { search, barcode, ...others } = problem?.errors ?? {};
    // The filters' problems go beside the search box; those of other parameters (a hand-made address's
    // `limit=0`) above the table, by name.
    const filterProblems = [...(search ?? []), ...(barcode ?? [])];
    if (filterProblems.length > 0) showFilterError(filterProblems.join(' '));
    const otherProblems = Object.entries(others).map(([name, messages]) => `${name}: ${messages.join(' ')}`);
    if (otherProblems.length > 0) showMessage(ui.listMessage, otherProblems.join(' '), 'error');
    else if (filterProblems.length === 0) showMessage(ui.listMessage, problemText(problem, response), 'error');
    return false;
  }
  const page = (await readJson<Page>(response))!;
  enterListing(url, page, remember);
  view.start = startOf(url, page, counted);
  if (page.next !== null) view.pageSize = page.results.length;
  renderRows(page.results, highlight);
  renderPager(page);
  return true;
}

/** Makes the listing at `url` the one in view (`page`: its answer, if any), without the last one's messages. */
function enterListing(url: string, page: Page | undefined, remember: boolean): void {
  hideMessage(ui.listMessage);
  ui.searchError.textContent = '';
  ui.search.removeAttribute('aria-invalid');
  if (remember) rememberListing(url);
  view.url = url;
  view.page = page;
}

function showFilterError(text: string): void {
  ui.searchError.textContent = text;
  ui.search.setAttribute('aria-invalid', 'true');
}

/**
 * The listing at `url` could not be shown: the rows of an earlier one would pass for its answer, and a
 * pager left as it was would page through them, so both are emptied and the pager has nowhere to go.
 */
function showNoListing(url: string, remember: boolean): void {
  enterListing(url, undefined, remember);
  view.start = 0;
  ui.rows.replaceChildren(emptyRow('No products to show.'));
  ui.count.textContent = '';
  ui.previous.disabled = true;
  ui.next.disabled = true;
  ui.indicator.textContent = 'Nothing to show';
}

function renderRows(items: readonly PageItem[], highlight: string | undefined): void {
  const rows = items.map((item) => {
    const row = document.createElement('tr');
    if (item.barcode === highlight) row.className = 'is-new';
    row.append(cell(item.name), cell(item.barcode, 'code'), cell(item.price, 'num'));
    return row;
  });
  if (rows.length === 0) {
    rows.push(emptyRow(isFiltered() ? 'No product matches. Try part of the name, or another barcode.' : 'No products yet. Add the first one with the form.'));
  }
  ui.rows.replaceChildren(...rows);
}

/** A row across the table saying why it has no products. */
function emptyRow(text: string): HTMLTableRowElement {
  const row = document.createElement('tr');
  const empty = cell(text, 'empty');
  empty.colSpan = 3;
  row.append(empty);
  return row;
}

function cell(text: string, className?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  if (className !== undefined) td.className = className;
  return td;
}

/**
 * Rows per full page: learnt from a full page seen, else from the links (limit/offset ones carry
 * `limit`; page-number style has 10 a page), else this page's own rows.
 */
function pageSizeOf(page: Page): number {
  const link = page.next ?? page.previous;
  if (view.pageSize !== undefined || link === null) return view.pageSize ?? page.results.length;
  const limit = new URL(link).searchParams.get('limit');
  return limit === null ? PAGE_NUMBER_SIZE : Number(limit);
}

/** Whether the page's count is every match: a search's count stops at 1,000, and then says so. */
function countIsExact(page: Page): boolean {
  return page.count_exact !== false;
}

function renderPager(page: Page): void {
  // Past the bound the count is only a floor: the service stopped counting there.
  const total = countIsExact(page) ? page.count.toLocaleString() : `more than ${page.count.toLocaleString()}`;
  const products = page.count === 1 && countIsExact(page) ? '1 product' : `${total} products`;
  ui.count.textContent = isFiltered() ? `${products} found` : products;
  ui.previous.disabled = page.previous === null;
  ui.next.disabled = page.next === null;
  if (page.results.length === 0) {
    ui.indicator.textContent = page.count === 0 ? 'Nothing to show' : 'Past the last product';
    return;
  }
  const size = pageSizeOf(page);
  const current = Math.floor(view.start / size) + 1;
  const first = view.start + 1;
  const last = view.start + page.results.length;
  if (!countIsExact(page)) {
    ui.indicator.textContent = `Page ${current} · ${first.toLocaleString()}–${last.toLocaleString()} of ${total}`;
    return;
  }
  const pages = Math.max(1, Math.ceil(page.count / size));
  ui.indicator.textContent = `Page ${Math.min(pages, current)} of ${pages} · ${first}–${last} of ${page.count}`;
}

async function follow(direction: 'next' | 'previous'): Promise<void> {
  const page = view.page;
  const url = page?.[direction];
  if (page === undefined || url === null || url === undefined) return;
  const size = pageSizeOf(page);
  const counted = direction === 'next' ? view.start + page.results.length : Math.max(0, view.start - size);
  const button = direction === 'next' ? ui.next : ui.previous;
  await showPage(url, counted);
  // A button that just became disabled would drop the keyboard focus to the page's top; when the page
  // could not be shown, neither button works and the search box is the way on.
  const other = direction === 'next' ? ui.previous : ui.next;
  if (button.disabled) (other.disabled ? ui.search : other).focus();
}

/**
 * The address of the page holding the catalogue's last product, in the deployment's paging style,
 * told apart by the parameters its links carry.
 */
function lastPageUrl(page: Page): string | undefined {
  const link = page.next ?? page.previous;
  // A count that stopped at 1,000 does not say where the last page is.
  if (link === null || !countIsExact(page)) return undefined;
  const url = new URL(link);
  if (url.searchParams.has('limit')) {
    const limit = Number(url.searchParams.get('limit'));
    url.searchParams.set('offset', String(Math.floor((page.count - 1) / limit) * limit));
  } else {
    url.searchParams.set('page', 'last');
  }
  return url.toString();
}

/** Shows the page that holds a product just added (the last one), with its row marked. */
async function showAdded(product: Product): Promise<void> {
  if (!(await showPage(view.url, view.start, product.barcode)) || view.page === undefined) return;
  if (view.page.results.some((item) => item.barcode === product.barcode)) return;
  const last = lastPageUrl(view.page);
  if (last !== undefined) await showPage(last, 0, product.barcode);
}

function fieldInput(field: string): HTMLInputElement | undefined {
  const input = document.getElementById(field);
  return input instanceof HTMLInputElement && input.form === ui.addForm ? input : undefined;
}

function clearFieldErrors(): void {
  for (const field of FIELDS) {
    fieldInput(field)!.removeAttribute('aria-invalid');
    byId(`${field}-error`, HTMLElement).textContent = '';
  }
}

/** Puts each field's messages next to it; messages about anything else are returned. */
function showFieldErrors(errors: Readonly<Record<string, readonly string[]>>): string[] {
  const unplaced: string[] = [];
  let first: HTMLInputElement | undefined;
  for (const [field, messages] of Object.entries(errors)) {
    const input = fieldInput(field);
    if (input === undefined) {
      unplaced.push(`${field}: ${messages.join(' ')}`);
      continue;
    }
    input.setAttribute('aria-invalid', 'true');
    byId(`${field}-error`, HTMLElement).textContent = messages.join(' ');
    first ??= input;
  }
  first?.focus();
  return unplaced;
}

async function addProduct(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const form = new FormData(ui.addForm);
  const body = Object.fromEntries(FIELDS.map((field) => [field, String(form.get(field) ?? '')]));
  const submit = ui.addForm.querySelector('button[type="submit"]');
  if (submit instanceof HTMLButtonElement) submit.disabled = true;
  clearFieldErrors();
  hideMessage(ui.formMessage);
  try {
    const response = await fetch(CREATE, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status === 201) {
      const product = (await readJson<Product>(response))!;
      ui.addForm.reset();
      fieldInput('name')?.focus();
      showMessage(ui.formMessage, `Added “${product.name}” as product ${product.pk}.`, 'success');
      showDetail(product);
      await showAdded(product);
      return;
    }
    const problem = await readJson<Problem>(response);
    const unplaced = showFieldErrors(problem?.errors ?? {});
    let summary = problemText(problem, response);
    if (response.status === 409) summary = 'A product with this barcode already exists. Check the barcode, or find the product in the list.';
    else if (response.status === 400 && problem?.errors !== undefined) summary = 'Please correct the fields marked below.';
    showMessage(ui.formMessage, [summary, ...unplaced].join(' '), 'error');
  } catch {
    showMessage(ui.formMessage, 'The catalogue cannot be reached; the product was not added. Try again.', 'error');
  } finally {
    if (submit instanceof HTMLButtonElement) submit.disabled = false;
  }
}

function showDetail(product: Product): void {
  byId('detail-name', HTMLElement).textContent = product.name;
  byId('detail-pk', HTMLElement).textContent = String(product.pk);
  byId('detail-barcode', HTMLElement).textContent = product.barcode;
  byId('detail-price', HTMLElement).textContent = product.price;
  const link = byId('detail-link', HTMLAnchorElement);
  link.href = `/api/v1/shop/product/${product.pk}`;
  link.textContent = link.getAttribute('href');
  ui.detail.hidden = false;
}

async function openProduct(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const pk = ui.openPk.value.trim();
  ui.openError.textContent = '';
  ui.openPk.removeAttribute('aria-invalid');
  const refuse = (message: string): void => {
    ui.openError.textContent = message;
    ui.openPk.setAttribute('aria-invalid', 'true');
    ui.detail.hidden = true;
    ui.openPk.focus();
  };
  if (!/^[0-9]+$/.test(pk) || Number(pk) < 1) {
    refuse('Enter a product number: a whole number from 1.');
    return;
  }
  try {
    const response = await fetch(`/api/v1/shop/product/${pk}`, { headers: { Accept: 'application/json' } });
    if (response.status === 404) return refuse(`There is no product number ${pk}.`);
    if (!response.ok) return refuse(problemText(await readJson<Problem>(response), response));
    showDetail((await readJson<Product>(response))!);
  } catch {
    refuse('The catalogue cannot be reached. Try again.');
  }
}

ui.previous.addEventListener('click', () => void follow('previous'));
ui.next.addEventListener('click', () => void follow('next'));
ui.addForm.addEventListener('submit', (event) => void addProduct(event));
ui.openForm.addEventListener('submit', (event) => void openProduct(event));
ui.searchForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const filter = filterOf(ui.search.value);
  ui.searchClear.hidden = filter === '';
  // Refused here, with the API's words, so that text of any length never goes into an address (a
  // pasted page of text would make the page's own address too long to reload); the address drops the
  // old filter, so that reload does not bring back its result.
  const length = [...ui.search.value.trim()].length;
  if (filter.startsWith('search=') && length > MAX_SEARCH_LENGTH) {
    showNoListing(FIRST_PAGE, true);
    showFilterError(`search is at most ${MAX_SEARCH_LENGTH} characters; got ${length}.`);
    return;
  }
  void showPage(filter === '' ? FIRST_PAGE : `${FIRST_PAGE}?${filter}`, 0);
});
ui.searchClear.addEventListener('click', () => {
  ui.search.value = '';
  ui.searchClear.hidden = true;
  void showPage(FIRST_PAGE, 0).then(() => ui.search.focus());
});
// Back and Forward: show the listing the address now names, without adding to the history.
window.addEventListener('popstate', () => {
  const url = listingFromLocation();
  showFilter(url);
  void showPage(url, 0, undefined, false);
});
const initial = listingFromLocation();
showFilter(initial);
void showPage(initial, 0, undefined, false);
