import type { Socket } from 'node:net';

/** How long a connection the service closes stays open for its client to read the last answer. */
const LINGER_MS = 500;

/**
 * Closes a connection after its last answer with our FIN first, and drops it a moment later. Dropped
 * at once, with the client's bytes still unread here (the rest of a refused request or body), it
 * would be reset, and a reset makes the client's system discard the answer it has received but not
 * yet read (a client still sending reads late).
 */
export function closeLingering(socket: Socket): void {
  socket.end();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
