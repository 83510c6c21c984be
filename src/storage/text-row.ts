import { sql, type RawBuilder } from 'kysely';
import type { StoreContext } from './store-context.js';

/** A column read by `readTextRow`: the UTF-8 bytes of its text, or null. */
export type TextBytes = Uint8Array | null;

/**
 * The one row of `statement` through the dialect's `readTextRow`, each of `columns` cast to text and
 * handed over as its bytes (PostgreSQL: read by COPY, so that a large text, a step of the whole list or
 * a page of the change feed, never becomes a string in the heap); `undefined` for no row or where the
 * dialect reads rows only as queries. `statement` must carry its values written in (`sql.lit`): such
 * a read takes no parameters.
 */
export async function readTextRow<C extends string>(context: StoreContext, statement: RawBuilder<unknown>, columns: readonly C[]): Promise<Record<C, TextBytes> | undefined> {
  const read = context.dialect.fastPaths?.readTextRow;
  if (read === undefined) return undefined;
  const casts = columns.map((column) => sql`CAST(${sql.ref(`text_row.${column}`)} AS TEXT)`);
  const select = sql`SELECT ${sql.join(casts)} FROM (${statement}) AS text_row`.compile(context.db).sql;
  const values = await context.run(() => read(select));
  return values === undefined ? undefined : (Object.fromEntries(columns.map((column, at) => [column, values[at] ?? null])) as Record<C, TextBytes>);
}

/** Whether the dialect reads rows by `readTextRow`: statements for it are then built with their values written in. */
export function readsTextRows(context: StoreContext): boolean {
  return context.dialect.fastPaths?.readTextRow !== undefined;
}

/** A column `readTextRow` read, as text (a number's digits, an identity): null stays null. */
export function textOf(bytes: TextBytes): string | null {
  return bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}
