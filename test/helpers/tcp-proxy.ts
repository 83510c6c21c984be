import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { postgres } from './stores.js';

/**
 * A TCP relay on 127.0.0.1 that plays network outages between the service and its database: a cut
 * (every connection dropped, new ones refused, as when the server is down) or a freeze (nothing
 * passes in either direction but no connection ends, as when a network drops packets silently).
 */
export class TcpProxy {
  #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  readonly #stranded = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;
  #frozen = false;

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
    for (const socket of [...this.#sockets, ...this.#stranded]) socket.destroy();
    await closed;
  }

  /** Stops every byte in both directions, on open connections and new ones, until `thaw()`. */
  freeze(): void {
    this.#frozen = true;
    for (const socket of this.#sockets) socket.pause();
  }

  /**
   * Leaves the connections frozen so far frozen for good and relays new ones: the old path has
   * become a black hole and a new one works, as after a fail-over to another server.
   */
  reroute(): void {
    this.#frozen = false;
    for (const socket of this.#sockets) this.#stranded.add(socket);
    this.#sockets.clear();
  }

  /**
   * Relays new connections to `target` from now on, the open ones staying where they were: one address
   * for a server that was stopped and started again on another port.
   */
  retarget(target: { host: string; port: number }): void {
    this.#target = target;
  }

  /** Lets the held bytes through and relays normally again. */
  thaw(): void {
    this.#frozen = false;
    for (const socket of this.#sockets) socket.resume();
  }

  #relay(client: Socket): void {
    const upstream = createConnection(this.#target);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      // Either side failing ends both; the error itself is the point of a cut.
      socket.on('error', () => undefined);
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // After the pipes, which set both sockets flowing.
    if (this.#frozen) for (const socket of [client, upstream]) socket.pause();
  }
}

/**
 * A fresh PostgreSQL database (`postgres.create()`'s) and an open proxy in front of it: its own URL
 * (`direct`, for reading back behind the proxy's back) and the URL through the proxy (`proxied`).
 */
export async function postgresBehindProxy(): Promise<{ proxy: TcpProxy; direct: string; proxied: string; drop: () => Promise<void> }> {
  const { location, drop } = await postgres.create();
  if (location.kind !== 'postgres') throw new Error('expected a PostgreSQL location');
  const direct = new URL(location.url);
  const proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  await proxy.open();
  const proxied = new URL(location.url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  return { proxy, direct: location.url, proxied: proxied.toString(), drop };
}
