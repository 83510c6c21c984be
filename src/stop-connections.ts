import type { Server, ServerResponse } from 'node:http';

/**
 * Lets a stop finish promptly: once `stopping()` is called, every answer not yet started says
 * `Connection: close` and its connection closes once it is written, and the connection of an answer
 * already under way closes when that answer ends. Otherwise a request in flight at the stop (a body
 * still arriving, say) would keep its keep-alive connection open after its answer, and the server,
 * which waits for every connection to close, would not close before the stop's time limit.
 * Connections already idle at the stop are closed by `server.close()` itself.
 *
 * @example const connections = closeConnectionsOnStop(app.server); ...; connections.stopping(); await app.close();
 */
export function closeConnectionsOnStop(server: Server): { stopping(): void } {
  const unfinished = new Set<ServerResponse>();
  let stopping = false;
  // Ahead of Fastify's own listener, so that no answer can be written before it is seen here.
  server.prependListener('request', (_request, response: ServerResponse) => {
    if (stopping) {
      closeAfter(response);
      return;
    }
    unfinished.add(response);
    const forget = (): void => void unfinished.delete(response);
    response.once('finish', forget);
    response.once('close', forget);
  });
  return {
    stopping(): void {
      if (stopping) return;
      stopping = true;
      for (const response of unfinished) closeAfter(response);
      unfinished.clear();
    },
  };
}

function closeAfter(response: ServerResponse): void {
  const socket = response.req.socket;
  // Node then writes no keep-alive headers, and ends the connection once the answer is written.
  if (!response.headersSent) response.setHeader('Connection', 'close');
  else if (response.writableFinished) socket.end();
  else response.once('finish', () => socket.end());
}
