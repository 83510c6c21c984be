/**
 * The platform's ceiling: a bare node:http server answering the bench's URLs with bodies computed
 * in advance. It does no work per request beyond a map lookup, so the service's ratio to it is the
 * cost of being a real service.
 *
 * Usage: node --import tsx bench/baseline-server.ts ROUTES_FILE PORT
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

export interface BaselineRoute {
  readonly key: string;
  readonly status: number;
  readonly start: number;
  readonly length: number;
  readonly location?: string;
}

const [routesFile, portText] = process.argv.slice(2);
if (routesFile === undefined || portText === undefined) {
  console.error('usage: baseline-server.ts ROUTES_FILE PORT');
  process.exit(2);
}
const blob = readFileSync(`${routesFile}.body`);
const routes = new Map<string, { status: number; body: Buffer; headers: Record<string, string | number> }>();
for (const route of JSON.parse(readFileSync(routesFile, 'utf8')) as BaselineRoute[]) {
  const body = blob.subarray(route.start, route.start + route.length);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': body.length,
    'access-control-allow-origin': '*',
  };
  if (route.location !== undefined) headers['location'] = route.location;
  routes.set(route.key, { status: route.status, body, headers });
}

const server = createServer((request, response) => {
  const route = routes.get(`${request.method} ${request.url}`);
  // Read the whole request body first, as any real server must before answering.
  request.resume();
  request.on('end', () => {
    if (route === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(route.status, route.headers).end(route.body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(portText), '127.0.0.1', () => console.log('ready'));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
