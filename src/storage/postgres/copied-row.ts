import type { Pool } from 'pg';
import { to as copyTo } from 'pg-copy-streams';

/** What every binary COPY begins with, before 4 bytes of flags and the header extension's length. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * The one row of `select` (a SELECT without parameters) read by `COPY (select) TO STDOUT (FORMAT binary)`:
 * each column's value as PostgreSQL sends it in binary (a text column: its UTF-8 bytes, as the dialect's
 * `readTextRow` hands them on), `null` for NULL; `undefined` when there is no row.
 *
 * Why not a query: `pg` decodes every value it receives into a JavaScript string before anything else
 * sees it, and a large text read many times over (a step of the whole list, 500 products' JSON) then
 * fills the V8 heap with strings that live just long enough to be promoted and die in the old
 * generation (docs/PERFORMANCE.md, "The whole list at a million"). COPY's data arrives as the socket's
 * bytes, outside the heap, as SQLite hands over a BLOB.
 */
export async function copiedRow(pool: Pool, select: string, isConnectionFailure: (error: unknown) => boolean): Promise<Array<Buffer | null> | undefined> {
  const client = await pool.connect();
  let broken = false;
  // A connection that breaks while the COPY runs is closed on release, not pooled again.
  const onError = (): void => {
    broken = true;
  };
  client.on('error', onError);
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of client.query(settledCopy(`COPY (${select}) TO STDOUT (FORMAT binary)`))) chunks.push(chunk as Buffer);
    return firstTuple(Buffer.concat(chunks));
  } catch (error) {
    if (isConnectionFailure(error)) broken = true;
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/**
 * A COPY TO query that tells `pg` when it has ended, as its own queries do. pg-copy-streams' does not
 * (brianc/node-pg-copy-streams#156), and `pg`'s `query_timeout` timer, started for every query, then
 * runs on after the COPY: 6 s later it reports a timeout on the finished stream, and until then it holds
 * the query, a timer for every step of every list.
 */
function settledCopy(text: string): ReturnType<typeof copyTo> {
  const query = copyTo(text) as ReturnType<typeof copyTo> & { callback?: (error?: Error) => void };
  // `pg` wraps this callback with the one that clears its timer.
  query.callback = () => undefined;
  const { handleError, handleReadyForQuery } = query as unknown as Record<'handleError' | 'handleReadyForQuery', (...args: unknown[]) => void>;
  Object.assign(query, {
    handleError(this: typeof query, ...args: unknown[]) {
      this.callback?.();
      handleError.apply(this, args);
    },
    handleReadyForQuery(this: typeof query, ...args: unknown[]) {
      this.callback?.();
      handleReadyForQuery.apply(this, args);
    },
  });
  return query;
}

/** The first tuple of a binary COPY's bytes (PostgreSQL's documentation, "COPY", "Binary Format"). */
function firstTuple(bytes: Buffer): Array<Buffer | null> | undefined {
  if (!bytes.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error('COPY did not answer in binary format.');
  let at = SIGNATURE.length + 4;
  at += 4 + bytes.readUInt32BE(at);
  const fields = bytes.readInt16BE(at);
  at += 2;
  // -1: the trailer, where the first tuple would be.
  if (fields < 0) return undefined;
  const values: Array<Buffer | null> = [];
  for (let field = 0; field < fields; field += 1) {
    const length = bytes.readInt32BE(at);
    at += 4;
    if (length < 0) {
      values.push(null);
      continue;
    }
    values.push(bytes.subarray(at, at + length));
    at += length;
  }
  return values;
}
