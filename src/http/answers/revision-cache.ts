/**
 * Values valid for one cache generation only (`CatalogueStore.cacheGeneration(scope)`), within a
 * memory budget in bytes and in entries. Storing a value of a newer generation than the one held
 * empties the cache first, and a value of an older one is dropped, so that nothing read before a
 * change of what it was read from is ever served after it.
 */
export class RevisionCache<T> {
  readonly #maxBytes: number;
  readonly #maxEntries: number;
  readonly #sizeOf: (value: T) => number;
  #revision = -1;
  #bytes = 0;
  readonly #entries = new Map<string, T>();

  /**
   * `sizeOf` estimates a value's bytes (e.g. a string's length); the cache keeps their sum under
   * `maxBytes` and holds at most `maxEntries` values, dropping the oldest first.
   */
  constructor(maxBytes: number, sizeOf: (value: T) => number, maxEntries = Number.POSITIVE_INFINITY) {
    this.#maxBytes = maxBytes;
    this.#maxEntries = maxEntries;
    this.#sizeOf = sizeOf;
  }

  get(revision: number, key: string): T | undefined {
    return revision === this.#revision ? this.#entries.get(key) : undefined;
  }

  set(revision: number, key: string, value: T): void {
    if (revision < this.#revision) return;
    if (revision > this.#revision) {
      this.#revision = revision;
      this.#entries.clear();
      this.#bytes = 0;
    }
    const size = this.#sizeOf(value) + key.length;
    if (size > this.#maxBytes || this.#entries.has(key)) return;
    // Oldest first (a Map iterates in insertion order) until the new value fits.
    for (const [oldKey, oldValue] of this.#entries) {
      if (this.#bytes + size <= this.#maxBytes && this.#entries.size < this.#maxEntries) break;
      this.#entries.delete(oldKey);
      this.#bytes -= this.#sizeOf(oldValue) + oldKey.length;
    }
    this.#entries.set(key, value);
    this.#bytes += size;
  }
}
