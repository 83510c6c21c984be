import { SingleBar } from 'cli-progress';
import type { BulkOptions } from '../storage/store.js';

/**
 * What a bulk command (import, remove, restore) says on standard error while the store writes in steps: that
 * a failure is being undone (which can take a while), what could not be put back, and with
 * `verbose` how long the write lock was held at most.
 */
export function bulkProgress(verbose: boolean): BulkOptions {
  return {
    onUndo: ({ steps }) => {
      if (steps > 0) console.error(`Undoing the ${steps} step${steps === 1 ? '' : 's'} already written…`);
    },
    onFinished: ({ steps, longestMs }) => {
      if (verbose) console.error(`${steps} step${steps === 1 ? '' : 's'}; the write lock was held at most ${longestMs.toFixed(1)} ms at a time.`);
    },
    onNotRestored: (barcodes) => {
      console.error(`Could not put back ${barcodes.length} removed product${barcodes.length === 1 ? '' : 's'} whose barcode another product took meanwhile: ${barcodes.join(', ')}.`);
    },
  };
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
