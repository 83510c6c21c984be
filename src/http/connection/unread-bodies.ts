import type { FastifyInstance } from 'fastify';
import { BODY_LIMIT_BYTES } from '../guards/json-body.js';
import { closeLingering as closeConnectionLingering } from './linger.js';

/** How long an answer waits for the rest of a body nobody reads, to say whether the connection stays. */
const BODY_WAIT_MS = 100;

/** Whether `drained` resolves true within `ms`. */
async function endsWithin(drained: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([drained, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Holds the body limit for bodies nobody reads. A request answered without reading its body (a 405,
 * a 415, a GET with a body) would leave Node discarding the rest for as long as it comes, so that the
 * connection can carry the next request: a chunked body could go on until the request time limit.
 * Here the unread body is read and counted instead; a small one that ends within a moment is drained
 * and the connection kept; one still coming, or past the limit, closes the connection once the answer
 * has been written. A body refused part way (413) is not read on at all.
 */
export function useUnreadBodyLimit(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const incoming = request.raw;
    if (incoming.complete) return payload;
    if (reply.statusCode === 413 || incoming.readableDidRead) {
      reply.header('Connection', 'close');
      return payload;
    }
    const closeLingering = (): void => closeConnectionLingering(incoming.socket);
    let discarded = 0;
    let ended: (withinLimit: boolean) => void = () => undefined;
    const drained = new Promise<boolean>((resolve) => (ended = resolve));
    const count = (chunk: Buffer): void => {
      discarded += chunk.length;
      if (discarded <= BODY_LIMIT_BYTES) return;
      incoming.off('data', count);
      incoming.pause();
      ended(false);
      if (reply.raw.writableFinished) closeLingering();
      else {
        reply.raw.once('finish', closeLingering);
        reply.raw.once('close', closeLingering);
      }
    };
    // Reading the body here also tells Node not to discard it by itself once the answer is written.
    incoming.on('data', count);
    incoming.once('end', () => ended(true));
    // The answer says whether the connection stays, and must be true to it. A body declared past the
    // limit is not drained. Any other is waited for a moment: one still coming after it (a chunked body
    // tells its length only as it ends; a declared one may be sent slowly) closes the connection with
    // the answer, lingering (linger.ts), as a next request could not be read until it had ended, and
    // the request's time limit would strike it with a second answer.
    const declared = incoming.headers['content-length'];
    const kept = declared !== undefined && Number(declared) > BODY_LIMIT_BYTES ? false : await endsWithin(drained, BODY_WAIT_MS);
    if (!kept) reply.header('Connection', 'close');
    return payload;
  });
}
