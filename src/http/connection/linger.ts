import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { closeThrough } from './node-internals.js';

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

/**
 * Every connection the server closes after an answer (one that says `Connection: close`: a refused
 * request line or version, a 417, a body still arriving or refused) is closed lingering, as above,
 * where Node would drop it as soon as its end is out and reset a client still sending. As nginx's
 * `lingering_close` does; it costs a closed connection one timer.
 */
export function lingerOnEveryClose(server: Server): void {
  server.on('connection', (socket: Socket) => closeThrough(socket, () => closeLingering(socket)));
}
