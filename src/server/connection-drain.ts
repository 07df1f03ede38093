import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Tracks open sockets and the requests on each, so that shutdown can close idle keep-alive
 * connections (and ones a client opened but never used) at once, and every other connection
 * as soon as its last request ends. Without this, `close()` waits out each client's
 * keep-alive timeout.
 */
export class ConnectionDrain {
  private readonly sockets = new Map<Socket, number>();
  private draining = false;

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      this.sockets.set(socket, 0);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** Requests whose response has not closed yet, over all connections. */
  get inFlight(): number {
    let n = 0;
    for (const open of this.sockets.values()) n += open;
    return n;
  }

  requestStarted(socket: Socket): void {
    this.sockets.set(socket, (this.sockets.get(socket) ?? 0) + 1);
  }

  /** Call when the response has closed (its bytes are flushed, or the client is gone). */
  requestEnded(socket: Socket): void {
    const open = Math.max(0, (this.sockets.get(socket) ?? 1) - 1);
    if (this.sockets.has(socket)) this.sockets.set(socket, open);
    if (this.draining && open === 0) socket.destroy();
  }

  /** From now on no connection outlives its last request; idle ones close now. */
  drain(): void {
    this.draining = true;
    for (const [socket, open] of this.sockets) if (open === 0) socket.destroy();
  }

  /** Closes every connection, busy or not (their requests are aborted). */
  destroyAll(): void {
    for (const socket of this.sockets.keys()) socket.destroy();
  }
}
