import { connect, type Socket } from 'node:net';

/**
 * Writes raw bytes to the server and returns everything it answers before closing or going idle.
 * `halfClose`: end the client's side right after the bytes, as `nc -N` or a client that has nothing
 * more to say does; the server must still answer what it was sent.
 */
export function rawExchange(url: string, bytes: string | Buffer, idleMs = 5000, halfClose = false): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => (halfClose ? socket.end(bytes) : socket.write(bytes)));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    socket.setTimeout(idleMs, () => socket.destroy(new Error('no answer')));
  });
}

/**
 * Writes raw bytes to the server and returns everything it answers, and whether the connection ended
 * in a reset rather than the server's close (a reset makes the client's system discard what it had
 * not read yet).
 */
export function resetAwareExchange(url: string, bytes: string | Buffer): Promise<{ answer: string; reset: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let reset = false;
    const socket = connect(Number(port), hostname, () => socket.write(bytes, () => undefined));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => (reset = true));
    socket.on('close', () => resolve({ answer: Buffer.concat(chunks).toString('utf8'), reset }));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')));
  });
}

/**
 * Writes `head`, then 1 KiB of filler again and again, as a client still sending its body does, until
 * the server ends its side; then one chunk more, and ends its own. Returns what the server answered,
 * and whether the connection was reset rather than closed: a server that drops a connection while
 * its client's bytes still arrive resets it, and the client's system may discard the answer unread.
 */
export function exchangeWhileSending(url: string, head: string): Promise<{ answer: string; reset: boolean }> {
  const { hostname, port } = new URL(url);
  const filler = Buffer.alloc(1024, 'x');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let reset = false;
    let serverEnded = false;
    // Half open: the client goes on sending after the server's end, as one still sending its body does.
    const socket: Socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true }, () => socket.write(head, pump));
    const pump = (): void => {
      if (serverEnded || socket.destroyed) return;
      socket.write(filler, () => setImmediate(pump));
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => {
      serverEnded = true;
      socket.end(filler);
    });
    socket.on('error', () => (reset = true));
    socket.on('close', () => resolve({ answer: Buffer.concat(chunks).toString('utf8'), reset }));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')));
  });
}

export interface EndlessBodyResult {
  /** Everything the server answered. */
  readonly answer: string;
  /** Body bytes written before the server closed the connection (or the time ran out). */
  readonly bytesWritten: number;
  /** Whether the server closed the connection within the time allowed. */
  readonly closedByServer: boolean;
}

/**
 * Sends `head` (a request line and headers announcing a chunked body), then 1 KiB chunks as fast as
 * the server takes them, for at most `limitMs`, and reports whether the server ended the connection.
 */
export function sendEndlessBody(url: string, head: string, limitMs: number): Promise<EndlessBodyResult> {
  const { hostname, port } = new URL(url);
  const chunk = Buffer.from(`400\r\n${'x'.repeat(1024)}\r\n`);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytesWritten = 0;
    let timedOut = false;
    const socket: Socket = connect(Number(port), hostname, () => {
      socket.write(head);
      pump();
    });
    const pump = (): void => {
      while (!socket.destroyed && !timedOut && socket.writable) {
        bytesWritten += 1024;
        if (!socket.write(chunk)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
    }, limitMs);
    socket.on('data', (data: Buffer) => chunks.push(data));
    // A reset while writing is the server closing too.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer: Buffer.concat(chunks).toString('utf8'), bytesWritten, closedByServer: !timedOut });
    });
  });
}
