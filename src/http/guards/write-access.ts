import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { WRITE_TOKEN_SCHEME } from '../contract/docs.js';
import { HttpProblem } from '../contract/problem.js';
import { problemResponse } from '../contract/responses.js';

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REALM = 'Bearer realm="catalogue"';

/**
 * Guards every route that changes the catalogue with a bearer token; reads stay public.
 *
 * A route is a write when the method it serves is one that changes state, so a POST answered 405
 * by a read-only address stays a 405, and a new write route is guarded without being listed here.
 */
export function useWriteToken(app: FastifyInstance, token: string): void {
  const expected = digest(token);
  // Every write route added from here on needs the token and can answer 401; its document says so.
  const unauthorized = problemResponse('Creating needs the header `Authorization: Bearer <token>` with the deployment\'s API_TOKEN; it was missing or wrong.', {
    'WWW-Authenticate': Type.String({ description: 'The challenge; `error="invalid_token"` when a token was sent but is wrong.', examples: [REALM] }),
  });
  // The check is the route's own hook, after the rate limit's (whose onRoute hook, made first, adds it
  // to the route first): a refused token is counted like any request, so that tokens cannot be guessed
  // faster than the limit, and a client over it is refused 429 whatever its token.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.length !== 1 || !WRITE_METHODS.has(methods[0]!)) return;
    route.onRequest = [...(route.onRequest === undefined ? [] : [route.onRequest].flat()), checkToken];
    const responses = route.schema?.response as Record<string, unknown> | undefined;
    if (responses !== undefined) {
      responses['401'] = unauthorized;
      route.schema!.security = [{ [WRITE_TOKEN_SCHEME]: [] }];
    }
  });
  async function checkToken(request: FastifyRequest): Promise<void> {
    const header = request.headers.authorization;
    const match = header === undefined ? null : /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
    if (match === null) {
      throw new HttpProblem(401, 'Creating products needs a token: send the header Authorization: Bearer <token>.', {
        headers: { 'WWW-Authenticate': REALM },
      });
    }
    // Hashing first makes both sides the same length, so the comparison's time says nothing about the token.
    if (!timingSafeEqual(digest(match[1]!), expected)) {
      throw new HttpProblem(401, 'The token is not valid.', { headers: { 'WWW-Authenticate': `${REALM}, error="invalid_token"` } });
    }
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
