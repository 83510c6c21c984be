import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { builtFile } from '../contract/build-output.js';

// The page, its style and its script, all from the build (`npm run build` copies the first two there).
const PAGE_DIR = fileURLToPath(builtFile(import.meta.url, 'web/'));

const ASSET = /^\/?[a-z-]+\.(css|js|js\.map)$/;

/** Nothing but this service may supply the page's parts: the shop may well be offline. */
const CONTENT_SECURITY_POLICY = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The catalogue page at `/`, with its style and script under `/assets/`. */
export async function webPage(app: FastifyInstance): Promise<void> {
  const page = await readFile(join(PAGE_DIR, 'index.html'), 'utf8');
  await app.register(fastifyStatic, {
    root: PAGE_DIR,
    prefix: '/assets/',
    allowedPath: (path) => ASSET.test(path),
    index: false,
    setHeaders: (response) => response.setHeader('X-Content-Type-Options', 'nosniff'),
  });
  app.get('/', { schema: { hide: true } }, (_request, reply) =>
    reply.header('Content-Security-Policy', CONTENT_SECURITY_POLICY).header('Cache-Control', 'no-cache').type('text/html; charset=utf-8').send(page),
  );
}
