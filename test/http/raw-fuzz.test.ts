import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeRun, fuzzAndCheck } from '../fuzz/raw-fuzz.js';
import { describeEachStore } from '../helpers/each-store.js';

/** Bounded here; `npm run fuzz -- --count 100000` for a long run. FUZZ_SEED replays a failure. */
const COUNT = Number(process.env.FUZZ_COUNT ?? 2000);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);

describeEachStore('mutated raw requests', (ctx) => {
  it(`never get a 5xx, a hang or internals, and no product is stored without its 201 (seed ${SEED})`, { timeout: 900_000 }, async () => {
    const result = await fuzzAndCheck({ url: ctx.server.url, seed: SEED, count: COUNT });
    console.log(`# ${describeRun(COUNT, SEED, result)}`);
    assert.deepEqual(result.failures, []);
    assert.ok(result.acknowledged.size > 0, 'no mutated create succeeded: the corpus is broken');
  });
});
