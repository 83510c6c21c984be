import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { MISSING_STATE } from './store-context.js';
import type { StateRow } from './dialect.js';
import type { Database } from './schema.js';
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

/**
 * A new identity for the catalogue (`catalogue_state.catalogue_id`): random, so that no two
 * databases, and no database before and after a restore, share one.
 */
export function newCatalogueId(): string {
  return randomUUID();
}

/** The catalogue's identity, as a subquery for statements that read it beside what they read. */
export const CATALOGUE_ID = '(SELECT catalogue_id FROM catalogue_state WHERE id = 0)';

/**
 * Gives the catalogue a new identity, raising the revision with it (caches keyed by the revision drop
 * the change feed's pages, which carry the identity).
 * @returns the new identity.
 */
export async function writeNewCatalogueId(db: Kysely<Database>): Promise<string> {
  const id = newCatalogueId();
  await db.updateTable('catalogue_state').set({ catalogue_id: id, revision: sql`revision + 1` }).where('id', '=', 0).execute();
  return id;
}
