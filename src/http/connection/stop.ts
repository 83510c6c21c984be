import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answerBeingWritten } from './node-internals.js';

/**
 * Lets a stop finish promptly without dropping an answer. From `acceptPending()` on, the last answer
 * each connection owes says `Connection: close`, so that no client sends another request on a
 * connection about to close. Once `stopping()` is called, each connection closes as soon as it owes
 * no answer. Its last owed answer says `Connection: close` when its head is
 * not yet written; answers of pipelined requests before it keep the connection, or Node would end it
 * after the first one and drop the rest (whose products may already be stored). A connection that
 * owes nothing (idle, or holding only part of a request's head) is closed at once. Otherwise the
 * server, which waits for every connection to close, would not stop before the stop's time limit.
 *
 * @example const connections = closeConnectionsOnStop(app.server); ...; await connections.acceptPending(); connections.stopping(); await app.close();
 */
export function closeConnectionsOnStop(server: Server): { acceptPending(): Promise<void>; stopping(): void } {
  /**
   * Per open connection, the answers it owes that Node does not show: those of requests pipelined
   * behind the answer being written, and once stopping, every one. The answer being written is Node's
   * own (`answerBeingWritten`), read at the stop: following it from here would cost a listener on
   * every request, a tenth of the rate of an answer written at once.
   */
  const owed = new Map<Socket, Set<ServerResponse>>();
  /** Since `acceptPending`: every answer is followed, and each connection's last says close. */
  let closing = false;
  /** Since `stopping`: a connection that owes nothing is closed. */
  let stopping = false;
  const answersOf = (socket: Socket): Set<ServerResponse> => {
    let answers = owed.get(socket);
    if (answers === undefined) {
      answers = new Set();
      owed.set(socket, answers);
      socket.once('close', () => owed.delete(socket));
    }
    return answers;
  };
  // An answer closes once written in full (Node emits it right after 'finish') or cut short.
  const follow = (socket: Socket, answers: Set<ServerResponse>, response: ServerResponse): void => {
    response.on('close', () => {
      if (answers.delete(response) && stopping) closeWhenOwingNothing(socket, answers);
    });
  };
  let accepted = 0;
  server.on('connection', (socket: Socket) => {
    accepted += 1;
    answersOf(socket);
  });
  // Ahead of Fastify's own listener, so that no answer can be written before it is counted here.
  server.prependListener('request', (request, response: ServerResponse) => {
    // Node hands the socket at once to the answer of a request nothing is pipelined ahead of.
    if (!closing && response.socket !== null) return;
    const socket = request.socket;
    const answers = answersOf(socket);
    answers.add(response);
    follow(socket, answers, response);
    if (closing) closeWhenOwingNothing(socket, answers);
  });
  /** From here on each connection's last answer says close; listeners that answer before routing step aside. */
  const beginClosing = (): void => {
    if (closing) return;
    closing = true;
    server.emit(STOP_BEGINS);
  };
  /**
   * Follows every answer each connection owes now, the one being written first, and has the last say
   * close; with `closeIdle`, closes the connections that owe none.
   */
  const markOwed = (closeIdle: boolean): void => {
    for (const [socket, answers] of owed) {
      // The answer being written comes before every one pipelined behind it.
      const current = answerBeingWritten(socket);
      if (current !== undefined && !answers.has(current)) {
        const behind = [...answers];
        answers.clear();
        for (const answer of [current, ...behind]) answers.add(answer);
        follow(socket, answers, current);
      }
      if (closeIdle || answers.size > 0) closeWhenOwingNothing(socket, answers, true);
    }
  };
  return {
    /**
     * Resolves once no new connection has come for PENDING_QUIET_MS, or after PENDING_ACCEPT_MS: the
     * connections the kernel had completed when the stop came are accepted by then, and the requests
     * they carried read, so that the stop owes them their answers. Closing the listening socket at once
     * would have the kernel reset them, unanswered, though their requests were sent whole. A quiet
     * spell, not a number of turns: a worker is handed the connections its primary took one at a time,
     * each after the worker has taken the one before (Node's round-robin cluster), and the turns between
     * two are many; once the last worker stops listening, the primary resets those it still holds.
     * Meanwhile each connection's last answer says close; one that owes none stays open, and the
     * request it may still carry is answered so.
     */
    async acceptPending(): Promise<void> {
      if (!closing) {
        beginClosing();
        markOwed(false);
      }
      const until = Date.now() + PENDING_ACCEPT_MS;
      let seen = accepted;
      let quietSince = Date.now();
      while (Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, PENDING_POLL_MS));
        // Timers run before the I/O of the same turn: a process that woke late (a busy machine) reads
        // the connections handed to it meanwhile before it judges the spell quiet.
        if (Date.now() - quietSince >= PENDING_QUIET_MS) await new Promise((resolve) => setImmediate(resolve));
        if (accepted !== seen) {
          seen = accepted;
          quietSince = Date.now();
        } else if (Date.now() - quietSince >= PENDING_QUIET_MS) {
          return;
        }
      }
    },
    stopping(): void {
      if (stopping) return;
      stopping = true;
      beginClosing();
      markOwed(true);
    },
  };
}

/**
 * Emitted on the server when a stop begins. A request listener that answers before routing (kept
 * answers) must then leave every request to the routes: an answer written at once, while the requests
 * pipelined behind it in the same packet are not yet read, would be taken for the connection's last
 * and close it, and those requests would go unanswered (creates among them stored all the same).
 */
export const STOP_BEGINS = 'catalogue:stop-begins';

/** The longest the stop waits for connections the kernel holds to be accepted: a share of its 10 s. */
const PENDING_ACCEPT_MS = 3_000;

/** How long no new connection must come before the stop takes it that none is pending. */
const PENDING_QUIET_MS = 50;

/** How often the stop looks for new connections meanwhile. */
const PENDING_POLL_MS = 5;

/** Answers this module marked to close their connection (an answer may be marked by its route too). */
const markedHere = new WeakSet<ServerResponse>();

function closeWhenOwingNothing(socket: Socket, answers: ReadonlySet<ServerResponse>, atStop = false): void {
  if (answers.size === 0) {
    // At the stop, nothing was received in full on it: there is nothing to finish.
    if (atStop) socket.destroy();
    else socket.end();
    return;
  }
  // In arrival order: only the last may close the connection. A request pipelined after the one
  // marked last (its body was still arriving at the stop) takes the mark over, if its head is not out.
  const inOrder = [...answers];
  for (const earlier of inOrder.slice(0, -1)) {
    if (!earlier.headersSent && markedHere.has(earlier)) {
      earlier.removeHeader('Connection');
      markedHere.delete(earlier);
    }
  }
  const last = inOrder[inOrder.length - 1]!;
  // Node then writes no keep-alive headers and ends the connection once this answer is written.
  if (!last.headersSent && last.getHeader('Connection') === undefined) {
    last.setHeader('Connection', 'close');
    markedHere.add(last);
  }
}
