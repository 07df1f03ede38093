import { isIPv4 } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

/** Origins a keyless server accepts by default: pages served from this machine. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function isLoopbackHostname(host: string): boolean {
  const h = host.toLowerCase();
  if (LOOPBACK_HOSTS.has(h) || h.endsWith('.localhost')) return true;
  return isIPv4(h) && h.startsWith('127.');
}

/** The host name of a Host header value ("h:port", "[::1]:port"), lower-cased. */
function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

function isLoopbackAddress(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  return addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.');
}

function forbidden(message: string, code: string): ApiError {
  return new ApiError(403, message, 'invalid_request_error', null, code);
}

function originAllowed(origin: string, allowed: readonly string[]): boolean {
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  if (allowed.length > 0) return false;
  try {
    return isLoopbackHostname(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/**
 * Cross-site protection for a server without an API key (with a key, a browser cannot send
 * the Authorization header cross-site without a CORS preflight, which is never granted):
 *  - a request that arrived on a loopback address must name a loopback Host, so a page that
 *    rebinds its own DNS name to 127.0.0.1 cannot read the answers (DNS rebinding);
 *  - an `Origin` header, which browsers send on cross-site requests, must be one of
 *    `allowedOrigins` (--allowed-origins; "*" allows any), by default a loopback origin.
 * Requests from non-browser clients (curl, SDKs) send no Origin and pass.
 */
export function checkOrigin(
  request: FastifyRequest,
  apiKey: string | null,
  allowedOrigins: readonly string[],
): void {
  if (apiKey !== null) return;
  const host = request.headers.host;
  if (isLoopbackAddress(request.socket.localAddress)) {
    if (host === undefined || !isLoopbackHostname(hostName(host)))
      throw forbidden(
        `Host ${JSON.stringify(host ?? '')} is not a loopback name; this keyless server ` +
          'answers only localhost requests (set --api-key to serve other names).',
        'forbidden_host',
      );
  }
  const origin = request.headers.origin;
  if (origin !== undefined && !originAllowed(origin, allowedOrigins))
    throw forbidden(
      `Origin ${JSON.stringify(origin)} is not allowed (see --allowed-origins).`,
      'forbidden_origin',
    );
}
