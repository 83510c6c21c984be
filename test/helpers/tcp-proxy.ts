import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP relay on 127.0.0.1 that a test can cut (every connection dropped, new ones refused) and
 * restore on the same port, to play a network outage between the service and its database.
 */
export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  get port(): number {
    return this.#port;
  }

  /** Starts relaying, on a new port the first time and on the same port after a cut. */
  async open(): Promise<void> {
    const server = createServer((client) => this.#relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Drops every open connection at once and refuses new ones until `open()`. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  #relay(client: Socket): void {
    const upstream = createConnection(this.#target);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      // Either side failing ends both; the error itself is the point of a cut.
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).on('close', () => client.destroy());
    upstream.pipe(client).on('close', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}
