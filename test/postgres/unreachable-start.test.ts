import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../../src/storage/open-store.js';
import { runServiceUntilExit } from '../helpers/child-server.js';

/** A port on 127.0.0.1 where nothing listens: connections are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('start-up with an unreachable PostgreSQL', () => {
  // A server that accepts connections and never says a word, like a host behind a broken network.
  const sockets = new Set<Socket>();
  const silent: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  let silentPort = 0;

  before(async () => {
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as AddressInfo).port;
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('refuses to open a store on a closed port, at once: with the refusal, not after a time limit', async () => {
    await assert.rejects(openStore({ kind: 'postgres', url: `postgres://postgres@127.0.0.1:${await closedPort()}/test` }), /ECONNREFUSED/);
  });

  it('gives up on a server that never answers within the connection timeout', async () => {
    const started = performance.now();
    await assert.rejects(openStore({ kind: 'postgres', url: `postgres://postgres@127.0.0.1:${silentPort}/test` }), /Connection terminated/);
    const elapsed = performance.now() - started;
    // Not before the limit (2 s); after it, ten times over, a bound for a wait that never ends.
    assert.ok(elapsed >= 1_500 && elapsed < 20_000, `gave up after ${Math.round(elapsed)} ms`);
  });

  it('makes the service process exit 1 with a one-line message', async () => {
    const url = `postgres://postgres:secret@127.0.0.1:${await closedPort()}/test`;
    // The limit includes compiling the TypeScript sources, which takes seconds of its own.
    const exit = await runServiceUntilExit({ DATABASE_URL: url, PORT: '0' }, 60_000);
    assert.equal(exit.code, 1);
    const lines = exit.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, exit.stderr);
    assert.match(lines[0]!, /^Cannot open the database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/test: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    assert.equal(exit.stdout, '');
  });
});
