import assert from 'node:assert/strict';
import { IncomingMessage, createServer } from 'node:http';
import { Socket } from 'node:net';
import { it } from 'node:test';
import { checkNodeInternals } from '../../src/http/connection/node-internals.js';

// The service leans on a few of Node's undocumented server fields (src/http/connection/node-internals.ts).
// CI runs this file on every supported Node: a release that changes one must fail here, not quietly in
// a shop (a pipelined 201 lost, a CONNECT left unanswered). The behaviour they give is tested through
// real sockets in connection-faults, odd-requests and methods-and-cors.

it(`Node ${process.version} still has the server internals the connection handling uses`, () => {
  const server = createServer();
  const socket = new Socket();
  try {
    assert.deepEqual(checkNodeInternals(server, new IncomingMessage(socket), socket), []);
  } finally {
    socket.destroy();
    server.close();
  }
});

it('the check names what is wrong when an internal is missing', () => {
  const server = createServer();
  const socket = new Socket();
  try {
    // As a Node release that dropped the flag would leave it.
    delete (server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen;
    const problems = checkNodeInternals(server, new IncomingMessage(socket), socket);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /httpAllowHalfOpen/);
  } finally {
    socket.destroy();
    server.close();
  }
});
