import type { CatalogueStore } from '../../src/storage/store.js';

/**
 * `store`, with each call of its method `name` going through `around`, which gets the call's arguments
 * and runs the call itself with `call()`: to count a store's reads, or how many run at once. Every other
 * method is the store's own.
 */
export function spyOnStore<K extends keyof CatalogueStore>(store: CatalogueStore, name: K, around: (args: unknown[], call: () => unknown) => unknown): CatalogueStore {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      if (key !== name) return value.bind(target);
      return (...args: unknown[]): unknown => around(args, () => Reflect.apply(value, target, args));
    },
  });
}
