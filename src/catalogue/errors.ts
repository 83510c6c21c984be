import type { FieldErrors, Product } from './product.js';

/** A product was refused by the catalogue's rules; `errors` says why, field by field. */
export class InvalidProductError extends Error {
  readonly errors: FieldErrors;

  constructor(errors: FieldErrors) {
    super('The product is not valid.');
    this.name = 'InvalidProductError';
    this.errors = errors;
  }
}

/** Another product already carries this barcode. */
export class DuplicateBarcodeError extends Error {
  readonly barcode: string;

  constructor(barcode: string) {
    super(`A product with barcode ${barcode} is already in the catalogue.`);
    this.name = 'DuplicateBarcodeError';
    this.barcode = barcode;
  }
}

/**
 * An idempotency key was recorded meanwhile by another request (a retry racing its original); it
 * carries what that request recorded, so that the caller can answer as that request did.
 */
export class IdempotencyKeyTakenError extends Error {
  readonly key: string;
  /** What the key was recorded with: the digest of its product, the pk it was given, the product now (if not removed). */
  readonly creation: { readonly fingerprint: string; readonly pk: number; readonly product: Product | undefined };

  constructor(key: string, creation: IdempotencyKeyTakenError['creation']) {
    super(`The idempotency key ${key} was already used.`);
    this.name = 'IdempotencyKeyTakenError';
    this.key = key;
    this.creation = creation;
  }
}

/** The database cannot be reached; the request may succeed if retried later. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('The catalogue database is not reachable.', { cause });
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Whether `error` says that the database cannot be read now, by this read or the next: it is away, or a
 * lock shuts readers out past the wait. Reads that take turns behind one that failed so share its
 * failure (turns.ts) rather than each waiting as long for the same.
 */
export function isDatabaseShut(error: unknown): boolean {
  return error instanceof StoreUnavailableError || error instanceof StoreBusyError;
}

/**
 * A write waited for another writer's lock on the catalogue (another process's import, plain SQL)
 * longer than it may; nothing was stored, and a retry in a moment may succeed.
 */
export class StoreBusyError extends Error {
  /** How long the write waited, in milliseconds, where known. */
  readonly waitedMs: number | undefined;

  constructor(waitedMs?: number, cause?: unknown) {
    super(`The catalogue is busy with another write${waitedMs === undefined ? '' : `; gave up after waiting ${Math.round(waitedMs)} ms`}.`, { cause });
    this.name = 'StoreBusyError';
    this.waitedMs = waitedMs;
  }
}

/**
 * Every pk up to MAX_PK has been drawn: a new product would get a pk that a JSON number (a JavaScript
 * number) cannot hold exactly. Nothing was stored.
 */
export class PksExhaustedError extends Error {
  constructor(cause?: unknown) {
    super('The catalogue has given out every pk up to 9007199254740991, the largest a JSON client reads exactly; nothing was stored.', { cause });
    this.name = 'PksExhaustedError';
  }
}

/** The database did not finish a statement within its time limit; what it did is undone. */
export class StoreTimeoutError extends Error {
  constructor(what: string, cause: unknown) {
    super(`The database did not finish ${what} within its time limit.`, { cause });
    this.name = 'StoreTimeoutError';
  }
}

/** Another bulk write (an import, a price list, a removal, a restore) is under way: one runs at a time. */
export class BulkWriteRunningError extends Error {
  /** What it does: an import, a price list, a removal. */
  readonly kind: string;
  /** The process that runs it: its machine, process id and a random part. */
  readonly owner: string;
  readonly startedAt: Date;

  constructor(kind: string, owner: string, startedAt: Date) {
    super(`Another ${kind} is under way (${owner}, since ${startedAt.toISOString()}); one bulk write runs at a time. Try again when it has finished.`);
    this.name = 'BulkWriteRunningError';
    this.kind = kind;
    this.owner = owner;
    this.startedAt = startedAt;
  }
}

/**
 * A restore is under way: a product created now would be removed by it (with --replace) or take a pk
 * its file holds, so creates are refused until it has finished or been undone.
 */
export class RestoreRunningError extends Error {
  constructor() {
    super('The catalogue is being restored from a backup; nothing was stored.');
    this.name = 'RestoreRunningError';
  }
}

/** A restore was asked to load into a catalogue that holds products, without being told to replace them. */
export class CatalogueNotEmptyError extends Error {
  readonly count: number;

  constructor(count: number) {
    super(`The catalogue holds ${count} product${count === 1 ? '' : 's'}; a restore loads into an empty catalogue unless told to replace what is there.`);
    this.name = 'CatalogueNotEmptyError';
    this.count = count;
  }
}

/** Barcodes that no product in the catalogue has. */
export class UnknownBarcodesError extends Error {
  readonly barcodes: readonly string[];

  constructor(barcodes: readonly string[]) {
    super(`No product has ${barcodes.length === 1 ? 'barcode' : 'barcodes'} ${barcodes.join(', ')}.`);
    this.name = 'UnknownBarcodesError';
    this.barcodes = barcodes;
  }
}

/**
 * Names written straight into the database (plain SQL, a bulk load) are still being folded for
 * search: a search now would miss them. Listings without a search are not affected.
 */
export class SearchCatchingUpError extends Error {
  /** Names still to fold, at least. */
  readonly pending: number;

  constructor(pending: number) {
    super(`Search is catching up with products written straight into the database: at least ${pending} names are still to be indexed.`);
    this.name = 'SearchCatchingUpError';
    this.pending = pending;
  }
}

/**
 * A bulk write failed, and undoing what it had written could not be finished either (the database went
 * away and did not come back in time): part of what it wrote is still in the catalogue until another
 * process finishes the undo (its journal says what is left).
 */
export class UndoCutShortError extends Error {
  constructor(failure: unknown, undoFailure: unknown) {
    const why = messageOf(failure);
    const undoWhy = messageOf(undoFailure);
    super(
      `${why} Undoing what had been written was cut short as well${undoWhy === why ? '' : ` (${undoWhy.replace(/\.$/, '')})`}: part of it stays in the catalogue until a running service, or the next import, price list, removal or restore, finishes undoing it.`,
      { cause: failure },
    );
    this.name = 'UndoCutShortError';
  }
}

function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return /[.!?]$/.test(message) ? message : `${message}.`;
}
