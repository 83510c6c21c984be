import { MISSING_STATE } from './store-context.js';
import type { StateRow } from './dialect.js';
import type { CatalogueState } from './store.js';

/**
 * The catalogue's state, kept by the database's own triggers (migrations 0002 and 0007): the count,
 * the revision (raised by every write) and the version (that of the last change to a product).
 */
export const STATE_ROW = 'SELECT product_count, revision, version FROM catalogue_state WHERE id = 0';

/** The state a row of `STATE_ROW` holds. */
export function stateOf(row: StateRow | undefined): CatalogueState {
  if (row === undefined || row.product_count === null) throw new Error(MISSING_STATE);
  return { count: Number(row.product_count), revision: Number(row.revision), version: Number(row.version) };
}
