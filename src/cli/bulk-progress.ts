import type { BulkOptions } from '../storage/store.js';

/**
 * What a bulk command (import, remove) says on standard error while the store writes in steps: that
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
