import { setTimeout as sleep } from 'node:timers/promises';

/** A worker that has answered no other request for this long is not kept from anything by the streams. */
const QUIET_AFTER_MS = 100;

export interface CatchUpPaceOptions {
  /** The share of the worker's time that sending the streams catching up may take while other requests are answered. */
  readonly share: number;
  /** Milliseconds of sending that may go at once, after a quiet moment, before the pace holds the next back. */
  readonly burstMs: number;
  /** How many requests this process has answered so far (any count that grows with each). */
  readonly answered: () => number;
}

/**
 * Keeps sending the streams catching up to a share of the worker's time while it has other requests
 * to answer: each piece waits until the pieces before it are that share of the time since, once a
 * burst is spent. What a stream is sent costs CPU as it goes into the kernel's socket buffers, whether
 * or not its client ever reads it: a thousand clients that connect at once and read nothing take some
 * megabytes each there before any is seen to be behind (docs/OPERATIONS.md), and sent as fast as the
 * kernel took them they held both workers for seconds. While nothing else is answered, the streams go
 * as fast as the worker can send.
 */
export class CatchUpPace {
  readonly #share: number;
  readonly #burstMs: number;
  readonly #answered: () => number;
  /** When (performance.now) the sending so far will have been the share of the time. */
  #paidUntil = 0;
  #lastAnswered: number;
  /** Until when (performance.now) other requests count as being answered. */
  #busyUntil = 0;

  constructor({ share, burstMs, answered }: CatchUpPaceOptions) {
    this.#share = share;
    this.#burstMs = burstMs;
    this.#answered = answered;
    this.#lastAnswered = answered();
  }

  /** Resolves when the next piece may go: at once while the worker is quiet or within the burst. */
  async ready(): Promise<void> {
    const now = performance.now();
    if (!this.#busy(now)) {
      this.#paidUntil = now;
      return;
    }
    const wait = this.#paidUntil - now - this.#burstMs / this.#share;
    if (wait > 0) await sleep(wait);
  }

  /** A piece of sending took `ms`, up to now. */
  spent(ms: number): void {
    const now = performance.now();
    this.#paidUntil = Math.max(now - ms, this.#paidUntil) + ms / this.#share;
  }

  /** Whether other requests have been answered lately; the first answer seen after a quiet moment starts a burst. */
  #busy(now: number): boolean {
    const answered = this.#answered();
    if (answered !== this.#lastAnswered) {
      if (now >= this.#busyUntil) this.#paidUntil = now;
      this.#lastAnswered = answered;
      this.#busyUntil = now + QUIET_AFTER_MS;
    }
    return now < this.#busyUntil;
  }
}
