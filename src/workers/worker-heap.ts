/**
 * The size in MB of each of the two semi-spaces of a worker's young generation. Node's default lets
 * them grow to 16 MB, which a heavy read (eight clients reading the whole list at a million on
 * PostgreSQL) does, and keeps: 32 MB a worker. At 8 the instance's peak RSS in that read fell by some
 * 40 MB, and cached reads ran at the same rate (docs/PERFORMANCE.md, "The whole list at a million").
 */
export const WORKER_SEMI_SPACE_MB = 8;

const SEMI_SPACE_FLAG = /(^|\s)--max[-_]semi[-_]space[-_]size\b/;

/**
 * The Node options a worker starts with: the primary's own, and the young generation's size unless the
 * operator chose one, on the command line or in `NODE_OPTIONS`.
 */
export function workerExecArgv(primaryExecArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const chosen = primaryExecArgv.some((option) => SEMI_SPACE_FLAG.test(option)) || SEMI_SPACE_FLAG.test(nodeOptions ?? '');
  return chosen ? [...primaryExecArgv] : [...primaryExecArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}
