/** Products a message names (by pk) of those it is about; it says how many more there are. */
export const NAMED_PKS = 10;

/** `pk 3, 9`, or past NAMED_PKS `pk 1, 2, … 10 and 1,990 more`: the operator sees how much there is to fix. */
export function namedPks(pks: readonly unknown[], total: number): string {
  const named = pks.slice(0, NAMED_PKS).map(String).join(', ');
  const more = total - Math.min(pks.length, NAMED_PKS);
  return more > 0 ? `pk ${named} and ${more.toLocaleString('en')} more` : `pk ${named}`;
}
