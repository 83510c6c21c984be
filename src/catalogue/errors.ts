import type { FieldErrors } from './product.js';

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

/** The database cannot be reached; the request may succeed if retried later. */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('The catalogue database is not reachable.', { cause });
    this.name = 'StoreUnavailableError';
  }
}
