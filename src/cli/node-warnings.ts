/** The one line Node prints when `node:sqlite` is first loaded (Node 22.16 and later). */
const SQLITE_EXPERIMENTAL = /^SQLite is an experimental feature/;

/**
 * Keeps Node's "SQLite is an experimental feature" warning off stderr, which carries the service's and
 * the command's own messages only (one line per start-up failure, data-free for pipes). The part of
 * `node:sqlite` the store uses is covered by the tests on every Node that uses it. Every other warning
 * is printed as before.
 */
export function hideSqliteExperimentalWarning(): void {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (SQLITE_EXPERIMENTAL.test(typeof warning === 'string' ? warning : warning.message)) return;
    Reflect.apply(emitWarning, process, [warning, ...rest]);
  }) as typeof process.emitWarning;
}
