import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { unknownTransferCoding } from '../guards/json-body.js';
import { HttpProblem } from '../contract/problem.js';

/**
 * Whether the request line names HTTP/1.0 or 1.1. Node's parser refuses `HTTP/1.2` or `HTTP/3.0`
 * itself, but takes `HTTP/0.9` and `HTTP/2.0` request lines and would have them answered as HTTP/1.1.
 */
export function isHttp1(request: IncomingMessage): boolean {
  return request.httpVersionMajor === 1;
}

/**
 * Refuses, before anything else looks at a request, what its framing asks that the service does not
 * do and Node's parser lets through: another HTTP version than 1.x, and a body in a transfer coding
 * other than `chunked` (`Transfer-Encoding: gzip, chunked`), on every method, whether or not its body
 * would be read. Both are 400s with a problem document, as the parser's own refusals are (a 5xx would
 * say the service failed), and the connection is closed after them: what follows on it cannot be
 * read as the next request. A callback hook: it costs a routed request two property reads.
 */
export function useFramingRefusals(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const incoming = request.raw;
    if (!isHttp1(incoming)) {
      done(new HttpProblem(400, `The request is HTTP/${incoming.httpVersion}; this service speaks HTTP/1.1 (and 1.0).`, { headers: { Connection: 'close' } }));
      return;
    }
    const transfer = incoming.headers['transfer-encoding'];
    done(transfer === undefined ? undefined : unknownTransferCoding(transfer));
  });
}
