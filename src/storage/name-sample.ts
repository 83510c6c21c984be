import { sql } from 'kysely';
import { STATE_ROW, stateOf } from './catalogue-state.js';
import type { DenseTexts, StateRow } from './dialect.js';
import type { StoreContext } from './store-context.js';

/** Names read into a sample: a text in 2 % of the names is then about 80 of them, one in 0.1 % about 4. */
const SAMPLE_SIZE = 4_000;
/** How long a sample serves before a search reads a new one (meanwhile the old one still serves). */
const SAMPLE_AGE_MS = 60_000;

/**
 * A sample of the catalogue's folded names, kept in memory to tell, without a query, whether a search
 * text is in many names or in few: the choice between walking the products in pk order and counting
 * through the trigram index (docs/PERFORMANCE.md, "Counting a search to 1,000"). Only the plan depends
 * on it, never the answer, so a sample a minute old is good enough.
 */
export class NameSample {
  readonly #context: StoreContext;
  readonly #dense: DenseTexts;
  #names: readonly string[] | undefined;
  #readAt = 0;
  #reading: Promise<readonly string[]> | undefined;

  constructor(context: StoreContext, dense: DenseTexts) {
    this.#context = context;
    this.#dense = dense;
  }

  /** Whether at least the dialect's share of the sampled names hold `text` (a folded search text). */
  async isDense(text: string): Promise<boolean> {
    const names = await this.#current();
    if (names.length === 0) return false;
    const needed = Math.ceil(this.#dense.share * names.length);
    let found = 0;
    for (const name of names) if (name.includes(text) && ++found >= needed) return true;
    return false;
  }

  /** The sample: read at the first search, then read again in the background once it is old. */
  async #current(): Promise<readonly string[]> {
    const stale = Date.now() - this.#readAt > SAMPLE_AGE_MS;
    if (stale && this.#reading === undefined) {
      this.#reading = this.#read().finally(() => {
        this.#reading = undefined;
      });
      // A failed read in the background leaves the old sample; a search that waits for it sees the error.
      this.#reading.catch(() => undefined);
    }
    return this.#names ?? (await this.#reading!);
  }

  async #read(): Promise<readonly string[]> {
    const names = await this.#context.run(async () => {
      const { rows: state } = await sql<StateRow>`${sql.raw(STATE_ROW)}`.execute(this.#context.db);
      const { rows } = await this.#dense.sample(SAMPLE_SIZE, stateOf(state[0]).count).execute(this.#context.db);
      return rows.flatMap((row) => (row.name_folded === null ? [] : [row.name_folded]));
    }, 'reading a sample of the names');
    this.#names = names;
    this.#readAt = Date.now();
    return names;
  }
}
