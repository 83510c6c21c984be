import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DatabaseLocation } from '../../src/config.js';
import type { StoreDialect } from '../../src/storage/dialect.js';
import { KyselyCatalogueStore } from '../../src/storage/kysely-store.js';
import { migrateStore, openDialect } from '../../src/storage/open-store.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { outsideSql } from '../helpers/outside-sql.js';
import { uniqueBarcode } from '../helpers/products.js';
import { postgres } from '../helpers/stores.js';

/** Names a JSON writer could get wrong: quotes, backslashes, characters outside Latin-1, a control character. */
const NAMES = ['Espresso "Forte" 1 kg', 'C:\\Kaffee\\Bohnen', 'Crème brûlée 🍮 × 6', 'Tab\there', 'Łódź — ギフト'];

describe('PostgreSQL: the whole list and the change feed read as text rows (COPY) answer what the same statements answer as queries', { skip: postgres.skip }, () => {
  let drop: () => Promise<void>;
  let location: DatabaseLocation;
  let copied: CatalogueStore;
  let queried: CatalogueStore;
  let textRowsRead = 0;

  before(async () => {
    ({ location, drop } = await postgres.create());
    await migrateStore(location);
    // One store through the dialect's reads by COPY, counted; one with them taken away: the plain queries.
    const dialect = openDialect(location, {}, 'serve');
    const read = dialect.fastPaths?.readTextRow;
    assert.ok(read, 'the PostgreSQL dialect reads text rows');
    const counted: StoreDialect = {
      ...dialect,
      fastPaths: {
        ...dialect.fastPaths,
        readTextRow: (select) => {
          textRowsRead += 1;
          return read(select);
        },
      },
    };
    copied = new KyselyCatalogueStore(counted);
    const plain = openDialect(location, {}, 'serve');
    queried = new KyselyCatalogueStore({ ...plain, fastPaths: { ...plain.fastPaths, readTextRow: undefined } });
  });

  after(async () => {
    await copied.close();
    await queried.close();
    await drop();
  });

  /** Both stores' answers to `read`, the JSON as text: they must be equal. */
  async function bothAnswer<T extends object>(read: (store: CatalogueStore) => Promise<T>): Promise<T> {
    const asText = (answer: T) => Object.fromEntries(Object.entries(answer).map(([key, value]) => [key, value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value]));
    const before = textRowsRead;
    const [byCopy, byQuery] = await Promise.all([read(copied), read(queried)]);
    assert.equal(textRowsRead, before + 1, 'read by COPY');
    assert.deepEqual(asText(byCopy), asText(byQuery));
    return asText(byCopy) as T;
  }

  it('on an empty catalogue', async () => {
    assert.deepEqual(await bothAnswer((store) => store.listProductsJsonAfter(0, 500)), { json: '', count: 0, lastPk: undefined });
    const page = await bothAnswer((store) => store.readChangesJson(0, 10));
    assert.deepEqual({ ...page, catalogue: typeof page.catalogue }, { catalogue: 'string', version: 0, changesJson: '[]', lastVersion: undefined, more: false });
  });

  it('on products with every kind of name, in steps, and on changes with a removal, in pages', async () => {
    for (const name of NAMES) await copied.createProduct({ name, barcode: uniqueBarcode(), priceCents: 1205 });
    const [, second] = await outsideSql<{ pk: string }>(location, 'SELECT pk FROM product ORDER BY pk');
    await outsideSql(location, 'DELETE FROM product WHERE pk = $1', [Number(second!.pk)]);

    const first = await bothAnswer((store) => store.listProductsJsonAfter(0, 2));
    assert.equal(first.count, 2);
    const rest = await bothAnswer((store) => store.listProductsJsonAfter(first.lastPk!, 500));
    assert.equal(rest.count, 2);
    const names = (JSON.parse(`[${String(first.json)},${String(rest.json)}]`) as Array<{ name: string }>).map((product) => product.name);
    assert.deepEqual(names, NAMES.filter((_, at) => at !== 1));

    const page = await bothAnswer((store) => store.readChangesJson(0, 3));
    assert.equal(page.more, true);
    const tail = await bothAnswer((store) => store.readChangesJson(page.lastVersion!, 10));
    assert.equal(tail.more, false);
    const removal = await bothAnswer((store) => store.readChangesJson(5, 10));
    assert.match(String(removal.changesJson), /"product":null/);
    assert.deepEqual(await bothAnswer((store) => store.readChangesJson(tail.version, 10)), { ...tail, changesJson: '[]', lastVersion: undefined });
  });
});
