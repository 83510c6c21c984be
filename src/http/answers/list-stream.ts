import { Readable } from 'node:stream';
import type { Product } from '../../catalogue/product.js';
import type { ProductsJson } from '../../storage/store.js';
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
 * database one step of keyset-ordered products at a time, each after a turn of the event loop, and
 * only as fast as the client takes it: a step is read when the stream's consumer asks for more (the
 * socket drained), so a client that stops reading stops the reads, and neither the whole table nor a
 * long-held database connection is ever needed.
 *
 * `readStep(afterPk)` gives the next products after `afterPk` as JSON, at most `stepRows`; `firstStep`
 * was read before the status line went out, so that an unreachable database is still a 503.
 */
export function listStream(readStep: (afterPk: number) => Promise<ProductsJson>, firstStep: ProductsJson, stepRows: number, lists: WholeLists): Readable {
  let inHand: ProductsJson | undefined = firstStep;
  let afterPk = 0;
  let opened = false;
  let written = false;
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
      nextStep().then(
        (step) => {
          reading = false;
          // A client that left while the step was read: its stream is gone, and waits for nothing.
          if (stream.destroyed) return;
          // Handed on at once: no step is held while the next is read, and none is read before the client asks.
          let more = true;
          if (!opened) more = stream.push('[');
          opened = true;
          if (step.count > 0) {
            if (written) more = stream.push(',');
            more = stream.push(step.json);
            written = true;
          }
          if (step.count < stepRows || step.lastPk === undefined) {
            stream.push(']');
            stream.push(null);
            return;
          }
          afterPk = step.lastPk;
          if (!more) setWaiting(true);
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

  /** The first step, read before the answer began, or the next one, read now (after a turn). */
  async function nextStep(): Promise<ProductsJson> {
    if (inHand !== undefined) {
      const step = inHand;
      inHand = undefined;
      return step;
    }
    // The requests that arrived meanwhile are served before the next step is read.
    await nextTurn();
    const step = await readStep(afterPk);
    lists.stepsRead += 1;
    return step;
  }

  return stream;
}

/** Products read as objects (a filtered list's matches) as a step of the list: the serializer's bytes for each. */
export function productsStep(products: readonly Product[]): ProductsJson {
  // The fields are plain strings and numbers: JSON.stringify writes the same bytes as the compiled serializer.
  return { json: products.map((product) => JSON.stringify(productWire(product))).join(','), count: products.length, lastPk: products.at(-1)?.pk };
}
