import { after, before, describe, type TestContext } from 'node:test';
import type { DatabaseLocation } from '../../src/config.js';
import { openStore } from '../../src/storage/open-store.js';
import type { CatalogueStore } from '../../src/storage/store.js';
import { startFreshServer, type RunningServer } from './server.js';
import { STORES, type TestStore } from './stores.js';

/** What a block of tests declared by `describeEachStore` runs against. */
export interface StoreTestContext {
  readonly testStore: TestStore;
  /** The block's server over a fresh database: started before its tests, stopped after them. */
  readonly server: RunningServer;
  /** A new empty database of this block's kind, dropped after test `t`. */
  freshDatabase(t: TestContext): Promise<FreshDatabase>;
  /** A store over a new empty database of this block's kind, closed and dropped after test `t`. */
  freshStore(t: TestContext): Promise<CatalogueStore>;
}

/** A database made for one test. */
export interface FreshDatabase {
  readonly location: DatabaseLocation;
  /** Opens a store over it as the block's database is opened; closed after the test, before the drop. */
  open(): Promise<CatalogueStore>;
}

export interface EachStoreOptions {
  /** The block's server settings, as the environment would give them; `false` starts no server. */
  readonly env?: Readonly<Record<string, string>> | false;
  readonly timeout?: number;
  /** The databases to loop over; `STORES` unless told. */
  readonly stores?: readonly TestStore[];
}

/**
 * Declares a block of tests once for every database of `STORES` (or `options.stores`), each named `title [database]` and
 * skipped where its database is not available, as Kysely's tests loop over dialects with `initTest`.
 * The block's server starts before the block's own `before` hooks run.
 *
 * @example describeEachStore('health probes', (ctx) => it('answers', async () => send(`${ctx.server.url}/healthz`)));
 */
export function describeEachStore(title: string, options: EachStoreOptions, define: (ctx: StoreTestContext) => void): void;
export function describeEachStore(title: string, define: (ctx: StoreTestContext) => void): void;
export function describeEachStore(
  title: string,
  optionsOrDefine: EachStoreOptions | ((ctx: StoreTestContext) => void),
  maybeDefine?: (ctx: StoreTestContext) => void,
): void {
  const [options, define] = typeof optionsOrDefine === 'function' ? [{}, optionsOrDefine] : [optionsOrDefine, maybeDefine!];
  const { env = {}, timeout, stores = STORES } = options;
  for (const testStore of stores) {
    describe(`${title} [${testStore.name}]`, { skip: testStore.skip, ...(timeout === undefined ? {} : { timeout }) }, () => {
      let server: RunningServer | undefined;
      if (env !== false) {
        before(async () => {
          server = await startFreshServer(testStore, { ...env });
        });
        after(() => server?.stop());
      }
      const freshDatabase = async (t: TestContext): Promise<FreshDatabase> => {
        const { location, drop } = await testStore.create();
        const opened: CatalogueStore[] = [];
        // One hook, so that the stores are closed before their database is dropped.
        t.after(async () => {
          for (const store of opened) await store.close();
          await drop();
        });
        return {
          location,
          open: async () => {
            const store = await openStore(location, testStore.storeOptions);
            opened.push(store);
            return store;
          },
        };
      };
      define({
        testStore,
        freshDatabase,
        freshStore: async (t) => (await freshDatabase(t)).open(),
        get server(): RunningServer {
          if (server === undefined) throw new Error(`No server here: ${env === false ? 'the block starts none' : 'it starts before the first test'}.`);
          return server;
        },
      });
    });
  }
}
