/** Resolves after the event loop has had a turn: the I/O waiting meanwhile (other requests) is served. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** When a task waiting for its turn gives up, and with what. */
export interface GiveUp {
  /**
   * A task waiting gives up once no task has ended well for this long, counted from when it was
   * given: the one running then hangs (a database that does not answer), and each task behind it
   * would otherwise wait for the time limit of every one before it, the tenth ten times as long.
   */
  readonly afterMs: number;
  /** The error a task that gave up rejects with. */
  readonly error: () => Error;
}

/**
 * Runs the tasks given to it one after another, with a turn of the event loop between two, so that
 * many heavy reads at once (broad searches, change streams catching up) queue here instead of taking
 * every database connection (PostgreSQL) or the one thread (SQLite) from the other requests.
 */
export class Turns {
  readonly #giveUp: GiveUp | undefined;
  readonly #failsTogether: ((error: unknown) => boolean) | undefined;
  /** Settles once the last task given has run, or given up; the next one waits for it. */
  #last: Promise<unknown> = Promise.resolve();
  /** When a task last ended well. */
  #lastEndedWell = performance.now();
  /** The last failure that the tasks waiting then share (`failsTogether`), and when it came. */
  #sharedFailure: { readonly error: unknown; readonly at: number } | undefined;

  /**
   * Without `giveUp`, a task waits for its turn however long the ones before it take. A task that fails
   * with an error `failsTogether` accepts (the database away, or shut by a lock past the wait) fails the
   * tasks waiting at that moment with it, each as its turn comes, instead of running them: each would
   * otherwise wait as long for the same thing, the tenth ten times as long.
   */
  constructor(giveUp?: GiveUp, failsTogether?: (error: unknown) => boolean) {
    this.#giveUp = giveUp;
    this.#failsTogether = failsTogether;
  }

  /** Runs `task` once every task given before it has settled; settles as it does, or rejects if it gives up first. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const giveUp = this.#giveUp;
    let gaveUp = false;
    let timer: NodeJS.Timeout | undefined;
    const given = performance.now();
    const ran = this.#last.then(async () => {
      clearTimeout(timer);
      if (gaveUp) return undefined as T;
      const shared = this.#sharedFailure;
      if (shared !== undefined && shared.at >= given) throw shared.error;
      try {
        const result = await task();
        this.#lastEndedWell = performance.now();
        return result;
      } catch (error) {
        if (this.#failsTogether?.(error) === true) this.#sharedFailure = { error, at: performance.now() };
        throw error;
      }
    });
    this.#last = ran.catch(() => undefined).then(nextTurn);
    if (giveUp === undefined) return ran;
    return new Promise<T>((resolve, reject) => {
      ran.then(resolve, reject);
      const check = (): void => {
        const stalledMs = performance.now() - Math.max(given, this.#lastEndedWell);
        if (stalledMs < giveUp.afterMs) {
          timer = setTimeout(check, giveUp.afterMs - stalledMs);
          return;
        }
        gaveUp = true;
        reject(giveUp.error());
      };
      timer = setTimeout(check, giveUp.afterMs);
    });
  }
}
