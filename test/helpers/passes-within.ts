/**
 * Retries `check` until it passes or `withinMs` have passed, `everyMs` apart (its last failure is
 * thrown then, so the failure says what was still wrong); with 0 it is tried once. The way a test
 * waits for state it cannot be told of: never a fixed sleep.
 */
export async function passesWithin(withinMs: number, check: () => Promise<void>, everyMs = 2): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (performance.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }
}
