
/**
 * Where the count of open streams, and of the memory they hold, is kept when several worker processes
 * share one instance's bounds.
 */
export interface SharedStreamCount {
  claimStream(max: number): Promise<boolean>;
  releaseStream(): void;
  /** Takes `bytes` of the streams' `budget` for this worker; false when that would go past it. */
  claimStreamBytes(bytes: number, budget: number): Promise<boolean>;
  releaseStreamBytes(bytes: number): void;
}

/**
 * How much of the instance's budget a worker takes at a time when it needs more: a page of changes is
 * a fraction of it, so that most pages are written without a question to the primary.
 */
const SLICE_BYTES = 256 * 1024;

/** A worker gives back what its streams no longer need once it holds this much more than they do. */
const UNUSED_KEPT_BYTES = 4 * SLICE_BYTES;

/** A stream as the memory it holds. */
export interface HoldingStream {
  /** When the oldest byte it holds for its client was written (performance.now): since then the client has been behind. */
  readonly behindSince: number;
  readonly closed: boolean;
}

export interface StreamMemoryOptions<S extends HoldingStream> {
  /** Bytes the instance's streams may hold at once, all its workers together. */
  readonly budget: number;
  /** The count kept for every worker of the instance; without it this process has the whole budget. */
  readonly shared: SharedStreamCount | undefined;
  /** This process's streams. */
  readonly streams: () => Iterable<S>;
  /** Bytes written for the stream's client that it has not taken yet, in this process (not the kernel's socket buffers). */
  readonly held: (stream: S) => number;
  /** Closes a stream at once, to free what it holds; its client resumes with Last-Event-ID. */
  readonly close: (stream: S) => void;
}

/**
 * The memory the change streams of an instance hold for clients that have not taken what they were
 * sent, bounded for the instance as a whole. Each worker holds a grant of the instance's budget from
 * the primary (which keeps it for every worker, as it keeps the streams' count) and takes more, a slice
 * at a time, when its streams need it. When the budget is spent, room is made where the most is held:
 * the primary asks the worker holding most to give some back, and a worker frees its share by closing
 * its streams whose clients have been behind longest. A client that takes what it is sent holds
 * little, briefly, and is the last to go.
 *
 * What a stream holds is counted as if it were its own copy, though streams at the same point share
 * the bytes of a page: the count is a bound on the memory, never below it.
 */
export class StreamMemory<S extends HoldingStream> {
  readonly #budget: number;
  readonly #shared: SharedStreamCount | undefined;
  readonly #streams: () => Iterable<S>;
  readonly #heldBy: (stream: S) => number;
  readonly #close: (stream: S) => void;
  /** What this process may hold: the whole budget alone, else what the primary granted it. */
  #granted: number;
  /** Streams closed to make room, since the start. */
  #closed = 0;

  constructor({ budget, shared, streams, held, close }: StreamMemoryOptions<S>) {
    this.#budget = budget;
    this.#shared = shared;
    this.#streams = streams;
    this.#heldBy = held;
    this.#close = close;
    this.#granted = shared === undefined ? budget : 0;
  }

  /** Bytes this process's streams hold now for their clients. */
  held(): number {
    let total = 0;
    for (const stream of this.#streams()) if (!stream.closed) total += this.#heldBy(stream);
    return total;
  }

  /** Streams closed so far to keep within the budget. */
  get closedForRoom(): number {
    return this.#closed;
  }

  /**
   * Makes room for `bytes` about to be written to `asker`: from this process's grant, from more of the
   * budget, or by closing the streams whose clients have been behind longest.
   *
   * @returns false when there is no room even so: `asker` goes past the budget.
   */
  async makeRoom(bytes: number, asker: S): Promise<boolean> {
    // A page larger than the whole budget goes once nothing else holds anything: it could never go otherwise.
    const need = Math.min(bytes, this.#budget);
    if (this.#missing(need) <= 0) return true;
    if ((await this.#claim(this.#missing(need))) && this.#missing(need) <= 0) return true;
    this.#closeBehind(need, asker);
    return this.#missing(need) <= 0;
  }

  /**
   * After writes that cannot wait for room (the live streams' events, which every live stream gets at
   * once): takes more of the budget for them, or closes the streams behind longest until the rest fit;
   * gives back what is no longer needed.
   */
  async settle(): Promise<void> {
    const over = this.#missing(0);
    if (over <= 0) {
      this.#giveBackUnused(-over);
      return;
    }
    if ((await this.#claim(over)) && this.#missing(0) <= 0) return;
    this.#closeBehind(0, undefined);
  }

  /**
   * Gives back up to `bytes` of this process's grant for another worker's streams (the primary asks),
   * first what its streams do not use, then by closing those behind longest.
   *
   * @returns the bytes given back.
   */
  shed(bytes: number): number {
    if (this.#shared === undefined) return 0;
    this.#closeBehind(bytes, undefined);
    const given = Math.max(0, Math.min(bytes, -this.#missing(0)));
    this.#granted -= given;
    return given;
  }

  /** Closes a stream that goes past the budget, and counts it. */
  closeForRoom(stream: S): void {
    this.#close(stream);
    this.#closed += 1;
  }

  /** How many bytes are missing for `need` more on top of what is held; negative: that much to spare. */
  #missing(need: number): number {
    return this.held() + need - this.#granted;
  }

  /** Takes `bytes` more of the instance's budget, in whole slices; false when it is spent. */
  async #claim(bytes: number): Promise<boolean> {
    if (this.#shared === undefined) return false;
    const slices = Math.ceil(bytes / SLICE_BYTES) * SLICE_BYTES;
    // A count the primary cannot give now (it is stopped, or gone and this worker with it) is no room.
    const granted = await this.#shared.claimStreamBytes(slices, this.#budget).catch(() => false);
    if (granted) this.#granted += slices;
    return granted;
  }

  #giveBackUnused(spare: number): void {
    if (this.#shared === undefined || spare < UNUSED_KEPT_BYTES) return;
    const given = Math.floor((spare - SLICE_BYTES) / SLICE_BYTES) * SLICE_BYTES;
    this.#granted -= given;
    this.#shared.releaseStreamBytes(given);
  }

  /** Closes streams, those whose clients have been behind longest first, until `need` more fits. */
  #closeBehind(need: number, spared: S | undefined): void {
    if (this.#missing(need) <= 0) return;
    const holding = [...this.#streams()]
      .filter((stream) => stream !== spared && !stream.closed && this.#heldBy(stream) > 0)
      .sort((a, b) => a.behindSince - b.behindSince);
    for (const stream of holding) {
      this.closeForRoom(stream);
      if (this.#missing(need) <= 0) return;
    }
  }
}
