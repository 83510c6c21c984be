import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ean13CheckDigit } from '../../src/catalogue/ean13.js';
import { databaseUrl, spawnServer, type ChildServer } from '../helpers/child-server.js';
import { runCli } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/each-store.js';
import { openEventStream } from '../helpers/event-stream.js';
import { postJson, send } from '../helpers/http.js';
import { outsideSql } from '../helpers/outside-sql.js';
import type { ProductWire } from '../../src/http/contract/schemas.js';

/** How long every kind of writer writes at once. */
const WRITING_MS = Number(process.env['FEED_CONSUMERS_WRITING_MS'] ?? 8_000);

interface Change {
  version: number;
  pk: number;
  product: ProductWire | null;
}

/** A consumer's copy of the catalogue, built from changes alone, and what it saw of their order. */
class Copy {
  readonly products = new Map<number, ProductWire>();
  version = 0;
  readonly problems: string[] = [];

  apply(change: Change): void {
    if (change.version <= this.version) this.problems.push(`change ${change.version} after ${this.version}`);
    this.version = change.version;
    if (change.product === null) this.products.delete(change.pk);
    else this.products.set(change.pk, change.product);
  }

  sorted(): ProductWire[] {
    return [...this.products.values()].sort((a, b) => a.pk - b.pk);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let barcodeSequence = 0;
/** A valid EAN-13 of a range no other test uses. */
function barcode(): string {
  barcodeSequence += 1;
  const first12 = `24${String(process.pid % 1000).padStart(3, '0')}${String(barcodeSequence).padStart(7, '0')}`;
  return first12 + String(ean13CheckDigit(first12));
}

describeEachStore('a copy kept through the change feed while every kind of writer writes', { env: false, timeout: 900_000 }, (ctx) => {
  it('ends equal to the catalogue, for a poller with small pages and a stream dropped and resumed every few seconds, over two instances', async (t) => {
    const { location, drop } = await ctx.testStore.create();
    const env = { DATABASE_URL: databaseUrl(location) };
    const servers: ChildServer[] = [];
    const folder = mkdtempSync(join(tmpdir(), 'catalogue-feed-'));
    t.after(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await drop();
      rmSync(folder, { recursive: true, force: true });
    });
    // One after the other: the first migrates.
    for (let i = 0; i < 2; i++) servers.push(await spawnServer(env));
    const serverOf = (n: number): ChildServer => servers[n % servers.length]!;
    const seed = join(folder, 'seed.csv');
    writeFileSync(seed, ['name,barcode,price', ...Array.from({ length: 200 }, (_, i) => `Seeded ${i},${barcode()},${i + 1}.00`)].join('\n'));
    assert.equal((await runCli('import', [seed], env)).code, 0);

    let writing = true;
    /** Set once every writer has finished its last write: only then is the catalogue's version final. */
    let written = false;
    const known = async (): Promise<ProductWire[]> => (await send(`${serverOf(0).url}/api/v1/shop/products`)).json as ProductWire[];
    const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(Math.random() * items.length)];
    const bulkExits: (number | null)[] = [];

    const creator = async (n: number): Promise<void> => {
      for (let i = 0; writing; i++) {
        const body = JSON.stringify({ name: `Created ${n}-${i}`, barcode: barcode(), price: `${i % 50}.25` });
        const res = await postJson(`${serverOf(n).url}/api/v1/shop/product/`, body, i % 3 === 0 ? { 'Idempotency-Key': `feed-${process.pid}-${n}-${i}` } : {});
        assert.ok(res.status === 201 || res.status === 503, `create answered ${res.status}: ${res.text}`);
        await pause(30);
      }
    };
    const bulkWriter = async (): Promise<void> => {
      for (let round = 0; writing; round++) {
        const products = await known();
        const list = join(folder, `prices-${round}.csv`);
        const listed = products.filter((_, i) => i % 9 === round % 9).slice(0, 60);
        const rows = [...listed.map((p) => `${p.name} v${round},${p.barcode},${round % 90}.50`), ...Array.from({ length: 10 }, (_, i) => `Listed ${round}-${i},${barcode()},3.30`)];
        writeFileSync(list, ['name,barcode,price', ...rows].join('\n'));
        bulkExits.push((await runCli('import', ['--update', list], env)).code);
        const doomed = [pick(products), pick(products)].filter((p) => p !== undefined).map((p) => p.barcode);
        bulkExits.push((await runCli('remove', [...new Set(doomed)], env)).code);
      }
    };
    const sqlWriter = async (): Promise<void> => {
      for (let round = 0; writing; round++) {
        await outsideSql(location, `UPDATE product SET price_cents = price_cents + 1 WHERE pk % 11 = ${round % 11}`);
        const victim = pick(await known());
        if (victim !== undefined) await outsideSql(location, `DELETE FROM product WHERE pk = ${victim.pk}`);
        await pause(200);
      }
    };

    const poller = new Copy();
    const poll = async (): Promise<void> => {
      for (let n = 0; ; n++) {
        const res = await send(`${serverOf(n).url}/api/v2/shop/changes?since=${poller.version}&limit=7`);
        assert.equal(res.status, 200, res.text);
        const page = res.json as { version: number; changes: Change[]; next: string | null };
        for (const change of page.changes) poller.apply(change);
        if (page.next === null) {
          // Nothing between the last change and the catalogue's version is missing: stand there.
          poller.version = Math.max(poller.version, page.version);
          if (written && page.version === (await finalVersion())) return;
          await pause(50);
        }
      }
    };
    const streamer = new Copy();
    const stream = async (): Promise<void> => {
      for (let n = 0; ; n++) {
        const events = await openEventStream(`${serverOf(n).url}/api/v2/shop/changes`, { 'Last-Event-ID': String(streamer.version) });
        assert.equal(events.status, 200, events.text());
        let applied = 0;
        const started = performance.now();
        // Followed for two to four seconds, then dropped and resumed on the other instance.
        const followFor = 2_000 + Math.random() * 2_000;
        while (performance.now() - started < followFor) {
          for (; applied < events.events.length; applied++) {
            const event = events.events[applied]!;
            if (event.event === 'change') streamer.apply(JSON.parse(event.data!) as Change);
            else if (event.event === 'caught-up') streamer.version = Math.max(streamer.version, Number(event.id));
          }
          if (written && streamer.version === (await finalVersion())) {
            events.close();
            return;
          }
          await pause(20);
        }
        events.close();
      }
    };
    const finalVersion = async (): Promise<number> => ((await send(`${serverOf(0).url}/api/v2/shop/changes?since=0&limit=1`)).json as { version: number }).version;

    const consumers = Promise.all([poll(), stream()]);
    const writers = Promise.all([creator(0), creator(1), bulkWriter(), sqlWriter()]);
    await pause(WRITING_MS);
    writing = false;
    await writers;
    written = true;
    await consumers;

    assert.ok(bulkExits.length >= 2 && bulkExits.every((code) => code === 0 || code === 1), `bulk commands exited ${bulkExits.join(', ')}`);
    const catalogue = await known();
    for (const [name, copy] of [['poller', poller], ['streamer', streamer]] as const) {
      assert.deepEqual(copy.problems, [], `${name} saw changes out of order`);
      assert.deepEqual(copy.sorted(), catalogue, `${name}'s copy differs from the catalogue`);
    }
    t.diagnostic(`${catalogue.length} products at version ${poller.version}; bulk commands ${bulkExits.length} (${bulkExits.filter((c) => c === 0).length} done)`);
  });
});
