/**
 * The `code` an error carries (Node's `EPIPE`, SQLite's `SQLITE_CONSTRAINT_UNIQUE`, PostgreSQL's
 * SQLSTATE), or `undefined`: anything may be thrown, so nothing is assumed of its shape.
 */
export function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

/** What an error says, for a one-line message: its `message`, or the thrown value as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
