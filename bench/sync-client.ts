/**
 * The client of `npm run bench -- --sync`, in a process of its own: reads the v1 list (`list`), or the
 * change feed from 0 following `next` (`sync`), each answer whole over one keep-alive connection, and
 * prints what it read as JSON. Usage: sync-client.ts BASE_URL list|sync
 */
import { Agent, get } from 'node:http';

const [base, mode] = process.argv.slice(2);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function fetchWhole(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${url}: ${response.statusCode}`))));
    }).on('error', reject);
  });
}

const started = performance.now();
let products = 0;
let bytes = 0;
if (mode === 'list') {
  const body = await fetchWhole(`${base}/api/v1/shop/products`);
  bytes = body.length;
  products = (JSON.parse(body.toString()) as unknown[]).length;
} else {
  for (let url: string | null = `${base}/api/v2/shop/changes?since=0&limit=10000`; url !== null; ) {
    const body = await fetchWhole(url);
    bytes += body.length;
    const page = JSON.parse(body.toString()) as { changes: unknown[]; next: string | null };
    products += page.changes.length;
    url = page.next;
  }
}
agent.destroy();
console.log(JSON.stringify({ products, bytes, seconds: (performance.now() - started) / 1000 }));
