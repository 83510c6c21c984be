import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { type Logger, pino } from 'pino';
import { loggerOptions, REQUEST_LINE, requestFields } from '../../src/http/observability/logging.js';
import { RequestLog } from '../../src/http/observability/request-log.js';

/** A pino logger with the service's options over a stream that keeps what it is written, write by write. */
function capturingLogger(level: string): { logger: Logger; writes: string[]; written: () => Promise<void> } {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString('utf8'));
      done();
      stream.emit('wrote');
    },
  });
  return { logger: pino(loggerOptions(level), stream), writes, written: async () => void (await once(stream, 'wrote')) };
}

const REQUESTS = [
  { method: 'GET', url: '/api/v1/shop/product/7', host: 'shop.example:8000', ip: '127.0.0.1', headers: { 'user-agent': 'till/7' } },
  // What JSON must escape, and what pino leaves out: a field whose value is undefined.
  { method: 'GET', url: '/api/v2/shop/products?search=%22tea%22\\', host: undefined, ip: undefined, headers: { 'user-agent': 'ua "quoted" \\ \u2028 \u0001 é' } },
  { method: 'POST', url: '/api/v1/shop/product/', host: '[::1]:8000', ip: '::1', headers: {} },
];

describe('the request log', () => {
  it('writes the line pino writes for a request, field for field and in the same order', async () => {
    for (const [i, request] of REQUESTS.entries()) {
      const { logger, writes, written } = capturingLogger('info');
      const status = 200 + i;
      const responseTime = 1.25 + i;
      logger.child({ reqId: `pino-${i}` }).info({ req: request, res: { statusCode: status }, responseTime }, REQUEST_LINE);
      new RequestLog(logger).completed(`pino-${i}`, request, status, responseTime);
      await written();
      assert.equal(writes.length, 2);
      const [byPino, byRequestLog] = writes.map((text) => {
        assert.equal(text.indexOf('\n'), text.length - 1, 'one line');
        const { time, ...line } = JSON.parse(text) as Record<string, unknown>;
        assert.equal(typeof time, 'number');
        return line;
      });
      assert.deepEqual(byRequestLog, byPino);
      assert.deepEqual(Object.keys(byRequestLog!), Object.keys(byPino!));
      assert.deepEqual((byRequestLog as { req: unknown }).req, JSON.parse(JSON.stringify(requestFields(request))));
    }
  });

  it('writes the lines of one turn of the event loop at once, in the order the requests were answered', async () => {
    const { logger, writes, written } = capturingLogger('info');
    const log = new RequestLog(logger);
    for (const [i, request] of REQUESTS.entries()) log.completed(`turn-${i}`, request, 200, 1);
    assert.equal(writes.length, 0, 'nothing before the turn ends');
    await written();
    assert.equal(writes.length, 1);
    const ids = writes[0]!.trimEnd().split('\n').map((text) => (JSON.parse(text) as { reqId: string }).reqId);
    assert.deepEqual(ids, ['turn-0', 'turn-1', 'turn-2']);
    // A later turn's line is a write of its own.
    log.completed('turn-3', REQUESTS[0]!, 200, 1);
    await written();
    assert.equal(writes.length, 2);
  });

  it('is made only over a logger of the service\'s pino', () => {
    assert.throws(() => new RequestLog({} as never), /needs a pino logger/);
  });
});
