import { parseArgs } from 'node:util';
import { startFreshServer } from '../helpers/server.js';
import { STORES } from '../helpers/stores.js';
import { describeRun, fuzzAndCheck } from './raw-fuzz.js';

// Long fuzz runs: npm run fuzz -- --count 100000 [--seed N] [--store sqlite|postgres]
const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    store: { type: 'string', default: 'sqlite' },
  },
});
const count = Number(values.count);
const seed = Number(values.seed);
const testStore = STORES.find((store) => store.name === values.store);
if (testStore === undefined || testStore.skip !== false || !Number.isInteger(count) || !Number.isInteger(seed)) {
  console.error(`usage: npm run fuzz -- --count N --seed N --store sqlite|postgres (${testStore?.skip || 'check the values'})`);
  process.exit(2);
}
const server = await startFreshServer(testStore, { LOG_LEVEL: 'silent' });
try {
  const result = await fuzzAndCheck({ url: server.url, seed, count });
  console.log(describeRun(count, seed, result));
  for (const failure of result.failures) console.error(failure);
  process.exitCode = result.failures.length > 0 ? 1 : 0;
} finally {
  await server.stop();
}
