import type { IncomingMessage } from 'node:http';

/**
 * Calls `then` once the connection `request` came on is gone, or at once if it is gone already. Node
 * tells an answer queued behind another on its connection (pipelined) nothing when the connection
 * closes: neither its 'close' nor an error comes, and a stream answering it would be read and held for
 * good. The request is told: its 'close' comes once its answer has been written or its connection is
 * gone, whichever is first. The connection's own 'close' is not listened to: a client pipelining a
 * hundred requests would put a hundred listeners on it.
 */
export function whenConnectionGone(request: IncomingMessage, then: () => void): void {
  const gone = (): boolean => request.socket?.destroyed === true;
  // Waited for even when the connection is already destroyed: Node marks the request aborted only as it
  // closes it, and Fastify answers a stream that fails on a request not marked so with a 500 of its own.
  if (request.destroyed) {
    if (gone()) then();
    return;
  }
  request.once('close', () => {
    if (gone()) then();
  });
}
