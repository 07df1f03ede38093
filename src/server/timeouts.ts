import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface HttpTimeouts {
  /** Time to receive a request's headers (slowloris). */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request, headers and body (a body sent a byte at a time). */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open (vLLM/uvicorn --timeout-keep-alive). */
  readonly keepAliveTimeoutMs: number;
  /**
   * How long a response may stay unable to write because its client stopped reading; then
   * the connection is closed and its generation aborted.
   */
  readonly stallTimeoutMs: number;
}

/**
 * The node:http server fastify runs on, with the request timeouts set. Node checks the header
 * and request timeouts on a timer (30 s by default), so the check interval is made short
 * enough for the limits to hold within a second.
 */
export function timedServerFactory(t: HttpTimeouts) {
  return (handler: RequestListener): Server => {
    const server = createServer(
      {
        headersTimeout: Math.min(t.headersTimeoutMs, t.requestTimeoutMs),
        requestTimeout: t.requestTimeoutMs,
        keepAliveTimeout: t.keepAliveTimeoutMs,
        connectionsCheckingInterval: Math.max(100, Math.min(1000, t.headersTimeoutMs / 4)),
      },
      handler,
    );
    // Node applies headersTimeout only once a request has started; a connection that never
    // sends a byte would stay open forever. Close it after the same time.
    server.on('connection', (socket: Socket) => {
      const timer = setTimeout(() => socket.destroy(), t.headersTimeoutMs);
      timer.unref();
      const clear = () => clearTimeout(timer);
      socket.once('data', clear);
      socket.once('close', clear);
    });
    return server;
  };
}

/**
 * Closes a response whose client has not read for `timeoutMs` while data waits to be sent
 * (its socket buffer full), which aborts the generation behind it. Returns the stop function;
 * the watch also stops by itself when the response closes.
 */
export function watchStall(res: ServerResponse, timeoutMs: number): () => void {
  let stalledSince: number | null = null;
  const tick = Math.max(50, Math.min(1000, timeoutMs / 4));
  const timer = setInterval(() => {
    const waiting = res.writableNeedDrain || (res.writableEnded && !res.writableFinished);
    if (!waiting) {
      stalledSince = null;
      return;
    }
    stalledSince ??= Date.now();
    if (Date.now() - stalledSince >= timeoutMs) {
      stop();
      res.destroy(new Error(`client stopped reading for ${timeoutMs} ms`));
    }
  }, tick);
  timer.unref();
  const stop = () => clearInterval(timer);
  res.once('close', stop);
  return stop;
}
