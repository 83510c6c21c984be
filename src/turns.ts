/** Resolves after the event loop has had a turn: the I/O waiting meanwhile (other requests) is served. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs the tasks given to it one after another, with a turn of the event loop between two, so that
 * many heavy reads at once (broad searches, change streams catching up) queue here instead of taking
 * every database connection (PostgreSQL) or the one thread (SQLite) from the other requests.
 */
export class Turns {
  /** The last task given; the next one waits for it. */
  #last: Promise<unknown> = Promise.resolve();

  /** Runs `task` once every task given before it has settled; settles as it does. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const turn = this.#last.then(task);
    this.#last = turn.catch(() => undefined).then(nextTurn);
    return turn;
  }
}
