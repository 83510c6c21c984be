import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeRun, fuzzAndCheck } from '../fuzz/raw-fuzz.js';
import { startFreshServer, type RunningServer } from '../helpers/server.js';
import { STORES } from '../helpers/stores.js';

/** Bounded here; `npm run fuzz -- --count 100000` for a long run. FUZZ_SEED replays a failure. */
const COUNT = Number(process.env.FUZZ_COUNT ?? 2000);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);

for (const testStore of STORES) {
  describe(`mutated raw requests [${testStore.name}]`, { skip: testStore.skip }, () => {
    let server: RunningServer;
    before(async () => {
      server = await startFreshServer(testStore);
    });
    after(() => server.stop());

    it(`never get a 5xx, a slow answer or internals, and no product is stored without its 201 (seed ${SEED})`, { timeout: 120_000 }, async () => {
      const result = await fuzzAndCheck({ url: server.url, seed: SEED, count: COUNT });
      console.log(`# ${describeRun(COUNT, SEED, result)}`);
      assert.deepEqual(result.failures, []);
      assert.ok(result.acknowledged.size > 0, 'no mutated create succeeded: the corpus is broken');
    });
  });
}
