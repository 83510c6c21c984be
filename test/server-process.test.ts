import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { databaseUrl, requestArrived, spawnQuietServer, spawnServer } from './helpers/child-server.js';
import { postJson, send, type RawResponse } from './helpers/http.js';
import { outsideSql } from './helpers/outside-sql.js';
import { listAll, uniqueBarcode } from './helpers/products.js';
import { passesWithin } from './helpers/passes-within.js';
import { sqlite } from './helpers/stores.js';

describe('the server process', () => {
  it('on SIGTERM finishes the request in flight, refuses new connections, and exits 0', { timeout: 180_000 }, async (t) => {
    const { location, drop } = await sqlite.create();
    t.after(drop);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), LOG_LEVEL: 'debug' });
    t.after(() => server.process.kill('SIGKILL'));

    // A create whose body is still arriving when the signal comes.
    const body = JSON.stringify({ name: 'Last one in', barcode: uniqueBarcode(), price: '1.00' });
    const half = body.length >> 1;
    let answered: (res: RawResponse) => void;
    let failed: (error: Error) => void;
    const answer = new Promise<RawResponse>((resolve, reject) => {
      answered = resolve;
      failed = reject;
    });
    const req = request(`${server.url}/api/v1/shop/product/`, {
      method: 'POST',
      agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => answered({ status: res.statusCode ?? 0, headers: res.headers, text, bytes: Buffer.from(text), json: JSON.parse(text) }));
    });
    req.on('error', (error) => failed(error));
    req.write(body.slice(0, half));
    await server.waitForLog(requestArrived('POST'));

    server.process.kill('SIGTERM');
    await server.waitForLog(/SIGTERM received/);
    // A new request is turned away (refused, reset, or 503 if it slipped in while the listener closed)
    // once the stop has taken the connections pending at the signal: until no new one came for 50 ms.
    await passesWithin(30_000, async () => {
      const late = await send(`${server.url}/api/v2/shop/products`).then((r) => String(r.status), (e: Error) => e.message);
      assert.match(late, /ECONNREFUSED|ECONNRESET|^503$/);
    }, 100);
    req.end(body.slice(half));

    const res = await answer;
    assert.equal(res.status, 201);
    assert.deepEqual(await server.exited, { code: 0, signal: null });

    const again = await spawnServer({ DATABASE_URL: databaseUrl(location) });
    try {
      assert.deepEqual(await listAll(again.url), [res.json]);
    } finally {
      again.process.kill('SIGTERM');
      assert.deepEqual(await again.exited, { code: 0, signal: null });
    }
  });

  it('on SIGTERM answers a keep-alive request still arriving and the creates pipelined behind it, the last with Connection: close, closes connections owing nothing, and exits 0 at once', { timeout: 180_000 }, async (t) => {
    const { location, drop } = await sqlite.create();
    t.after(drop);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), LOG_LEVEL: 'debug' });
    t.after(() => server.process.kill('SIGKILL'));
    const { hostname, port } = new URL(server.url);
    const open = (): Promise<ReturnType<typeof connect>> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => resolve(socket));
        socket.once('error', reject);
      });
    /** Everything the service writes on a connection, until it closes its side. */
    const readAll = (socket: ReturnType<typeof connect>): Promise<string> =>
      new Promise((resolve, reject) => {
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        socket.once('end', () => resolve(text));
        socket.once('error', reject);
      });

    // A keep-alive connection that has had its answer and sits idle when the signal comes.
    const idle = await open();
    const idleText = readAll(idle);
    idle.write(`GET /api/v2/shop/products HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\n\r\n`);
    await server.waitForLog(/request completed/);

    // Connections holding no request: one silent (a load balancer's spare), one with half a head.
    const silent = await open();
    const partial = await open();
    partial.write(`GET /healthz HTTP/1.1\r\nHo`);
    const closed = (socket: ReturnType<typeof connect>) => new Promise((resolve) => socket.once('close', resolve));
    const silentClosed = closed(silent);
    const partialClosed = closed(partial);
    silent.on('data', () => undefined);
    partial.on('data', () => undefined);

    // HTTP/1.1 without a Connection header: the client means to keep the connection.
    const body = JSON.stringify({ name: 'Arriving slowly', barcode: uniqueBarcode(), price: '1.00' });
    const create = (name: string): string => {
      const json = JSON.stringify({ name, barcode: uniqueBarcode(), price: '1.00' });
      return `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
    };
    const busy = await open();
    const busyText = readAll(busy);
    busy.write(
      `POST /api/v1/shop/product/ HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    await server.waitForLog(requestArrived('POST'));
    server.process.kill('SIGTERM');
    await server.waitForLog(/SIGTERM received/);
    // The stop is under way: the connections that owe nothing are closed while the create still arrives.
    await Promise.all([silentClosed, partialClosed]);
    assert.match(await idleText, /^HTTP\/1\.1 200 /);
    assert.equal(server.process.exitCode, null, 'the service ended while a create was still arriving');
    // The rest of the body, and three more creates pipelined behind it: each is owed its 201.
    busy.write(body.slice(10) + create('Pipelined 1') + create('Pipelined 2') + create('Pipelined 3'));

    const answer = await busyText;
    const answers = answer.split(/(?=HTTP\/1\.1 )/);
    assert.deepEqual(answers.map((text) => text.slice(0, 12)), Array(4).fill('HTTP/1.1 201'));
    assert.match(answers[3]!, /\r\nconnection: close\r\n/i);
    assert.doesNotMatch(answers[3]!, /keep-alive/i);
    assert.deepEqual(await server.exited, { code: 0, signal: null });
    // The stop finished what it owed, not cut short by its time limit.
    assert.ok(!server.logs.some((entry) => /did not finish/.test(entry.msg ?? '')));
  });

  /** Answers a keep-alive client has had before the service is told to stop. */
  const STOP_AFTER_ANSWERS = 20;
  for (const workers of ['1', '2']) {
    it(`on SIGTERM tells a keep-alive client sending request after request that the connection closes, and answers every request it sent (WORKERS=${workers})`, { timeout: 180_000 }, async (t) => {
      const { location, drop } = await sqlite.create();
      t.after(drop);
      const server = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: workers });
      t.after(() => server.process.kill('SIGKILL'));
      const { hostname, port } = new URL(server.url);
      // One connection, each request sent as soon as the answer before it is read, as a client's
      // keep-alive pool does; the client stops using the connection once an answer says close.
      const outcome = await new Promise<{ sent: number; answered: number; saidClose: boolean; error?: string }>((resolve) => {
        const socket = connect(Number(port), hostname);
        let [sent, answered, saidClose, pending] = [0, 0, false, ''];
        const ask = (): void => {
          sent += 1;
          socket.write(`GET /healthz HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\n\r\n`);
        };
        socket.once('connect', ask);
        socket.on('data', (chunk: Buffer) => {
          pending += chunk.toString('latin1');
          for (;;) {
            const headEnd = pending.indexOf('\r\n\r\n');
            if (headEnd < 0) return;
            const head = pending.slice(0, headEnd);
            const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
            if (pending.length < headEnd + 4 + length) return;
            pending = pending.slice(headEnd + 4 + length);
            answered += 1;
            // The stop comes while requests follow one another, whatever the machine's speed (a
            // timer could fire before a busy machine's service had answered any).
            if (answered === STOP_AFTER_ANSWERS) server.process.kill('SIGTERM');
            if (/\r\nconnection: *close/i.test(head)) saidClose = true;
            else ask();
          }
        });
        socket.on('error', (error) => resolve({ sent, answered, saidClose, error: error.message }));
        socket.on('close', () => resolve({ sent, answered, saidClose }));
      });
      assert.deepEqual({ ...outcome, sent: outcome.sent >= STOP_AFTER_ANSWERS, answered: outcome.answered === outcome.sent }, { sent: true, answered: true, saidClose: true });
      assert.deepEqual(await server.exited, { code: 0, signal: null });
    });
  }

  for (const workers of ['1', '2']) {
    it(`on SIGTERM answers every request pipelined on a connection opened during the stop, kept answers included (LOG_LEVEL=warn, WORKERS=${workers})`, { timeout: 180_000 }, async (t) => {
      const { location, drop } = await sqlite.create();
      t.after(drop);
      const server = await spawnQuietServer({ DATABASE_URL: databaseUrl(location), WORKERS: workers });
      t.after(() => server.process.kill('SIGKILL'));
      const { hostname, port } = new URL(server.url);
      const target = '/api/v2/shop/products?limit=2';
      // Kept by every worker: at LOG_LEVEL=warn such an answer is written before routing.
      for (let i = 0; i < 8; i++) assert.equal((await send(`${server.url}${target}`)).status, 200);
      const four = `GET ${target} HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\n\r\n`.repeat(4);
      /** The answers to four GETs sent in one packet on a new connection, until the service closes it. */
      const batch = (): Promise<number> =>
        new Promise((resolve) => {
          const socket = connect(Number(port), hostname, () => socket.write(four));
          let text = '';
          socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
          socket.on('error', () => undefined);
          socket.on('close', () => resolve(text.split('HTTP/1.1 ').length - 1));
          socket.setTimeout(5_000, () => socket.destroy());
        });
      server.process.kill('SIGTERM');
      // New connections every 10 ms through the stop's quiet spell, which each of them prolongs.
      const answered: number[] = [];
      const batches: Array<Promise<void>> = [];
      for (let i = 0; i < 40; i++) {
        batches.push(batch().then((count) => void answered.push(count)));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await Promise.all(batches);
      // A connection reset by the stop, before or after the service took it, gets none: the documented edge.
      assert.deepEqual(answered.filter((count) => count !== 0 && count !== 4), [], `answers per connection: ${answered.join(' ')}`);
      // The first, opened as the signal went, is taken. How many after it depends on this process's timers:
      // on a busy machine two connections can lie further apart than the quiet spell, and the rest are
      // refused (seen: 4 0 0 0 ...).
      assert.ok(answered.some((count) => count === 4), `answers per connection: ${answered.join(' ')}`);
      assert.deepEqual(await server.exited, { code: 0, signal: null });
    });
  }

  it('on SIGTERM answers the requests of connections the kernel completed but the process had not yet taken', { timeout: 180_000 }, async (t) => {
    const { location, drop } = await sqlite.create();
    t.after(drop);
    // One process: with workers the primary takes the connections, and its stop is its own.
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location), WORKERS: '1' });
    t.after(() => {
      server.process.kill('SIGCONT');
      server.process.kill('SIGKILL');
    });
    const { hostname, port } = new URL(server.url);
    // Frozen, the process accepts nothing: the connections wait in the kernel, their requests sent whole.
    server.process.kill('SIGSTOP');
    const sockets = await Promise.all(
      Array.from({ length: 20 }, () => new Promise<ReturnType<typeof connect>>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => resolve(socket));
        socket.once('error', reject);
      })),
    );
    const written: Array<Promise<unknown>> = [];
    const answers = sockets.map((socket) => new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.once('close', () => resolve(text));
      socket.once('error', () => undefined);
      written.push(new Promise((sent) => socket.write(`GET /healthz HTTP/1.1\r\nHost: ${server.url.slice(7)}\r\n\r\n`, sent)));
    }));
    // Every request is with the kernel before the signal; the frozen process takes the signal as it thaws.
    await Promise.all(written);
    server.process.kill('SIGTERM');
    server.process.kill('SIGCONT');
    for (const text of await Promise.all(answers)) assert.match(text, /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}$/);
    assert.deepEqual(await server.exited, { code: 0, signal: null });
  });

  it('keeps every acknowledged product through a SIGKILL under concurrent writes', { timeout: 180_000 }, async (t) => {
    const { location, drop } = await sqlite.create();
    t.after(drop);
    const server = await spawnServer({ DATABASE_URL: databaseUrl(location) });
    t.after(() => server.process.kill('SIGKILL'));

    const acknowledged: unknown[] = [];
    let killed = false;
    let reachedEnough: () => void;
    const enough = new Promise<void>((resolve) => (reachedEnough = resolve));
    const writer = async (): Promise<void> => {
      while (!killed) {
        const body = JSON.stringify({ name: `Crash ${acknowledged.length}`, barcode: uniqueBarcode(), price: '2.00' });
        let res: RawResponse;
        try {
          res = await postJson(`${server.url}/api/v1/shop/product/`, body);
        } catch (error) {
          // The connection dies with the process: that request's fate is unknown, and that is allowed.
          if (killed) return;
          throw error;
        }
        // Any answer that comes is a 201, before the kill or after it.
        assert.equal(res.status, 201, res.text);
        if (acknowledged.push(res.json) === 80) reachedEnough();
      }
    };
    const writers = Array.from({ length: 6 }, writer);
    await Promise.race([enough, Promise.all(writers)]);
    killed = true;
    server.process.kill('SIGKILL');
    await Promise.all(writers);
    assert.equal((await server.exited).signal, 'SIGKILL');

    const again = await spawnServer({ DATABASE_URL: databaseUrl(location) });
    try {
      const stored = new Map((await listAll(again.url)).map((product) => [product.pk, product]));
      for (const product of acknowledged as Array<{ pk: number }>) assert.deepEqual(stored.get(product.pk), product);
    } finally {
      again.process.kill('SIGTERM');
      await again.exited;
    }
    assert.deepEqual(await outsideSql(location, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }]);
  });
});
