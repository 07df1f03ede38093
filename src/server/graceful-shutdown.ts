import type { FastifyInstance } from 'fastify';
import type { ConnectionDrain } from './connection-drain.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Graceful stop: from now on new requests get a 503 (the port stays open, so clients see
     * an answer, not a refused connection), idle connections close, and requests in flight
     * may finish for `timeoutMs`; whatever is left then is cut off (its generation aborted),
     * and the server closes. Resolves in about `timeoutMs` at most, whatever clients do.
     */
    drainAndClose(timeoutMs?: number): Promise<void>;
  }
}

export interface ShutdownState {
  closing: boolean;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export function installGracefulShutdown(
  app: FastifyInstance,
  state: ShutdownState,
  drain: ConnectionDrain,
  defaultTimeoutMs: number,
): void {
  app.addHook('preClose', async () => {
    state.closing = true;
    drain.drain();
  });
  app.decorate('drainAndClose', async (timeoutMs: number = defaultTimeoutMs) => {
    state.closing = true;
    drain.drain();
    const deadline = Date.now() + timeoutMs;
    while (drain.inFlight > 0 && Date.now() < deadline) await sleep(20);
    if (drain.inFlight > 0) drain.destroyAll();
    await app.close();
  });
}
