/**
 * A till's morning, against a running catalogue: `npx tsx examples/till/main.ts [BASE_URL]`
 * (default http://localhost:8000; set API_TOKEN when the service needs one).
 */
import { randomInt, randomUUID } from 'node:crypto';
import { OfflineCopy } from './offline-copy.js';
import { CatalogueError, createTill } from './till.js';

const baseUrl = process.argv[2] ?? 'http://localhost:8000';
const till = createTill({ baseUrl, token: process.env['API_TOKEN'] });

/** A barcode for goods priced in the shop itself: GS1 keeps prefix 2 for such in-store numbers. */
function inStoreBarcode(): string {
  const digits = `2${String(randomInt(0, 100_000_000_000)).padStart(11, '0')}`;
  const sum = [...digits].reduce((total, digit, i) => total + Number(digit) * (i % 2 === 0 ? 1 : 3), 0);
  return `${digits}${(10 - (sum % 10)) % 10}`;
}

try {
  const loaf = { name: 'Sourdough loaf', barcode: inStoreBarcode(), price: '4.20' };
  const key = randomUUID();
  const created = await till.create(loaf, key);
  console.log(`created: ${JSON.stringify(created.product)}`);
  // The answer was lost, say: the same request with the same key creates nothing more.
  const retried = await till.create(loaf, key);
  console.log(`retried: pk ${retried.product.pk}, replayed ${retried.replayed}`);

  const scanned = await till.scan(loaf.barcode);
  console.log(`scanned ${loaf.barcode}: ${scanned === undefined ? 'not in the catalogue' : `${scanned.name} at ${scanned.price}`}`);
  const read = await till.product(created.product.pk);
  console.log(`product ${created.product.pk}: ${read?.name} at ${read?.price}`);

  let pages = 0;
  let products = 0;
  for await (const page of till.pages(50)) {
    pages += 1;
    products += page.length;
  }
  console.log(`catalogue: products ${products}, pages of 50 ${pages}`);

  // The till's own copy: made from the change feed, then kept in step by its live stream.
  const copy = new OfflineCopy(baseUrl);
  await copy.sync();
  console.log(`offline copy: products ${copy.products().length} at version ${copy.version}`);
  const following = copy.follow();
  await following.caughtUp;
  const rolls = { name: 'Bread rolls, 6', barcode: inStoreBarcode(), price: '2.40' };
  const heard = new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (copy.scan(rolls.barcode) === undefined) return;
      clearInterval(check);
      resolve();
    }, 10);
  });
  await till.create(rolls);
  await heard;
  following.stop();
  const found = copy.scan(rolls.barcode)!;
  console.log(`offline copy: heard of ${found.name} (pk ${found.pk}); products ${copy.products().length}`);
} catch (error) {
  if (!(error instanceof CatalogueError)) throw error;
  console.error(`The catalogue refused: ${error.status} ${error.message} ${JSON.stringify(error.problem?.errors ?? {})}`);
  process.exitCode = 1;
}
