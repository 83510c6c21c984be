import { SingleBar } from 'cli-progress';
import { errorMessage } from '../error-details.js';
import { UNDO_RETRY_MS } from '../storage/bulk-write-journal.js';
import type { BulkOptions, BulkWait, RunningBulkWrite } from '../storage/store.js';

/**
 * What a bulk command (import, remove, restore) says on standard error while the store writes in steps: that
 * a failure is being undone (which can take a while), what could not be put back, and with
 * `verbose` how long the write lock was held at most.
 */
export function bulkProgress(verbose: boolean): BulkOptions {
  const stop = stopOnSignals();
  return {
    signal: stop,
    onUndo: ({ steps }) => {
      // Stopped: the command's one line says it all.
      if (steps > 0 && !stop.aborted) console.error(`Undoing the ${steps} step${steps === 1 ? '' : 's'} already written…`);
    },
    onAbandonedUndone: tellAbandonedUndone,
    onUndoRetry: (error) => {
      console.error(`${errorMessage(error).replace(/\.$/, '')}; undoing goes on once it is back (for up to ${UNDO_RETRY_MS / 1000} s)…`);
    },
    onFinished: ({ steps, longestMs }) => {
      if (verbose) console.error(`${steps} step${steps === 1 ? '' : 's'}; the write lock was held at most ${longestMs.toFixed(1)} ms at a time.`);
    },
    onNotRestored: (barcodes) => {
      console.error(`Could not put back ${barcodes.length} removed product${barcodes.length === 1 ? '' : 's'} whose barcode another product took meanwhile: ${barcodes.join(', ')}.`);
    },
  };
}

/** Says that a bulk write left half-written by a process that stopped was undone before this one. */
export function tellAbandonedUndone({ kind, owner, startedAt }: RunningBulkWrite): void {
  console.error(`First undid the ${kind} started at ${startedAt.toISOString()} by ${owner}, which its process had left half-written.`);
}

/** A bulk command stopped by a signal (Ctrl-C, a service manager's stop): what it wrote was undone. */
export class StoppedBySignal extends Error {
  readonly signal: string;

  constructor(signal: string) {
    super(`Stopped by ${signal}`);
    this.name = 'StoppedBySignal';
    this.signal = signal;
  }
}

/**
 * Aborted by the first SIGINT or SIGTERM, so that the bulk write stops after its step and undoes what
 * it wrote, all or nothing. A second one ends the process at once, as it would have without this (its
 * bulk write is then undone by the next one, or by a running service). The person who pressed Ctrl-C
 * is told at once that it was heard: a step, or a read waiting for its input, can take a while.
 */
function stopOnSignals(): AbortSignal {
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals): void => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    console.error(`${signal}: stopping after the step under way; what was written will be undone.`);
    controller.abort(new StoppedBySignal(signal));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return controller.signal;
}

/**
 * A bar per pass over a file of `size` bytes (checking, then writing) for a person at a terminal, or
 * over `total` of something else (products removed); a log or a pipe gets the summary alone.
 */
export function progressBar(size: number): { update: (phase: string, done: number, total?: number) => void; stop: () => void } {
  if (!process.stderr.isTTY) return { update: () => undefined, stop: () => undefined };
  // cli-progress draws on standard error, so standard output stays free for data.
  const bar = new SingleBar({ format: '{phase} |{bar}| {percentage}%', hideCursor: true });
  let current = '';
  let done = 0;
  return {
    update: (phase, amount, total = size) => {
      if (phase !== current) {
        if (current !== '') bar.stop();
        current = phase;
        done = 0;
        bar.start(Math.max(total, 1), 0, { phase: phase.padEnd(9) });
      }
      done += amount;
      bar.update(done);
    },
    stop: () => {
      if (current !== '') bar.stop();
    },
  };
}

/** What a bulk command shows while it waits for the bulk write under way, and how it ends the showing. */
export interface ShownWait {
  readonly wait: BulkWait;
  /** Ends the display of the seconds waited (the wait is over). */
  stop(): void;
}

/**
 * The wait of a bulk command for the bulk write under way (`--wait[=SECONDS]`; `seconds` Infinity: as
 * long as it runs), shown on standard error: a line naming the bulk write when the wait for it begins,
 * and on a terminal the seconds waited so far (of SECONDS, with a bar) while the wait lasts.
 */
export function bulkWait(seconds: number): ShownWait {
  const began = Date.now();
  const limited = Number.isFinite(seconds);
  // cli-progress draws on standard error, so standard output stays free for data.
  const bar = process.stderr.isTTY ? new SingleBar({ format: limited ? 'waiting |{bar}| {value} s of {total} s' : 'waiting {value} s', hideCursor: true }) : undefined;
  let drawing = false;
  let named: string | undefined;
  const stop = (): void => {
    if (drawing) bar?.stop();
    drawing = false;
  };
  return {
    wait: {
      until: began + seconds * 1000,
      onWaiting: (running) => {
        const waited = Math.floor((Date.now() - began) / 1000);
        const which = `${running.owner} ${running.startedAt.getTime()}`;
        if (which !== named) {
          stop();
          named = which;
          console.error(`Waiting for the ${running.kind} started at ${running.startedAt.toISOString()} by ${running.owner} to finish${limited ? ` (at most ${seconds} s)` : ''}…`);
        }
        if (bar === undefined) return;
        if (drawing) bar.update(waited);
        else bar.start(limited ? seconds : 0, waited);
        drawing = true;
      },
    },
    stop,
  };
}

/** What a failure says of the wait: how long it waited for the bulk write still under way. */
export function waitedFor(seconds: number | undefined): string {
  return seconds === undefined || seconds === 0 ? '' : ` Waited ${seconds} s for it to finish.`;
}
