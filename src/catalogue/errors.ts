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
  /** The digest of the product the key was recorded with. */
  readonly fingerprint: string;
  readonly product: Product;

  constructor(key: string, fingerprint: string, product: Product) {
    super(`The idempotency key ${key} was already used.`);
    this.name = 'IdempotencyKeyTakenError';
    this.key = key;
    this.fingerprint = fingerprint;
    this.product = product;
  }
}

/** The database cannot be reached; the request may succeed if retried later. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('The catalogue database is not reachable.', { cause });
    this.name = 'StoreUnavailableError';
  }
}
