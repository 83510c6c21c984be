import { Readable } from 'node:stream';
import type { Product } from '../../catalogue/product.js';
import { nextTurn } from '../../turns.js';
import { productWire } from '../contract/wire.js';

/**
 * Rows read per step of a streamed list. A step's read, on SQLite, holds the one thread: about 500 rows
 * of serialized products (some 50 KB) keep it to a few milliseconds, so that a detail read waits at most
 * for one step of each list open beside it.
 */
export const LIST_STEP_ROWS = 500;

/**
 * Bytes of a list a stream holds before it waits for its client to take them: about one step. With the
 * socket's own buffer, what a client that stops reading holds in the process stays near two steps.
 */
const LIST_HELD_BYTES = 64 * 1024;

/** The streamed lists of an app, as `/metrics` tells them: open, waiting for their clients, steps read. */
export class WholeLists {
  /** Steps read from the database by every streamed list so far. */
  stepsRead = 0;
  /** Streamed lists not yet ended or closed. */
  open = 0;
  /** Of those, the ones holding a step their client has not taken yet: they read no more until it does. */
  waiting = 0;
}

/**
 * The list as JSON text (the bytes the compiled serializer writes for the array), read from the
 * database one step of keyset-ordered rows at a time, each after a turn of the event loop, and only
 * as fast as the client takes it: a step is read when the stream's consumer asks for more (the socket
 * drained), so a client that stops reading stops the reads, and neither the whole table nor a
 * long-held database connection is ever needed.
 *
 * `readStep(afterPk)` gives the next rows after `afterPk`, at most `stepRows`; `firstStep` was read before
 * the status line went out, so that an unreachable database is still a 503.
 */
export function listStream(readStep: (afterPk: number) => Promise<Product[]>, firstStep: readonly Product[], stepRows: number, lists: WholeLists): Readable {
  let step: readonly Product[] | undefined = firstStep;
  let first = true;
  let reading = false;
  let waiting = false;
  const setWaiting = (now: boolean): void => {
    if (now !== waiting) lists.waiting += now ? 1 : -1;
    waiting = now;
  };
  lists.open += 1;
  lists.stepsRead += 1;

  const stream = new Readable({
    highWaterMark: LIST_HELD_BYTES,
    read() {
      setWaiting(false);
      if (reading) return;
      reading = true;
      next().then(
        (text) => {
          reading = false;
          // A client that left while the step was read: its stream is gone, and waits for nothing.
          if (stream.destroyed) return;
          const more = stream.push(text);
          if (step === undefined) stream.push(null);
          else if (!more) setWaiting(true);
        },
        (error: unknown) => stream.destroy(error instanceof Error ? error : new Error(String(error))),
      );
    },
    destroy(error, callback) {
      setWaiting(false);
      lists.open -= 1;
      callback(error);
    },
  });

  /** The text of the step in hand, and the next step read (after a turn), or `undefined` after the last. */
  async function next(): Promise<string> {
    const rows = step ?? [];
    let text = first ? '[' : '';
    for (const product of rows) {
      // The same bytes as the compiled serializer writes for a product: the fields are plain strings and numbers.
      text += (first ? '' : ',') + JSON.stringify(productWire(product));
      first = false;
    }
    if (rows.length < stepRows) {
      step = undefined;
      return `${text}]`;
    }
    // The requests that arrived meanwhile are served before the next step is read.
    await nextTurn();
    step = await readStep(rows[rows.length - 1]!.pk);
    lists.stepsRead += 1;
    return text;
  }

  return stream;
}
