import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { unauthorized } from './errors.js';

/**
 * Routes anyone may call even when an API key is set: liveness, the version and the
 * Prometheus scrape (vLLM leaves the same ones open).
 */
const OPEN_ROUTES: ReadonlySet<string> = new Set(['/health', '/version', '/metrics']);

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or ''. */
function bearerToken(header: string | undefined): string {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m ? m[1]! : '';
}

/**
 * Throws a 401 unless the request may run its route. The decision is made on the route the
 * router matched (`routeOptions.url`, a pattern such as "/v1/chat/completions"), never on the
 * raw request target: percent-encoding, absolute-form targets ("http://h/v1/…"), query
 * strings and the like all reach the same route and so meet the same check. Unmatched
 * requests run no handler (they get the 404), so they need no key.
 */
export function checkApiKey(request: FastifyRequest, key: string | null): void {
  if (key === null) return;
  const route = request.routeOptions.url;
  if (route === undefined || OPEN_ROUTES.has(route)) return;
  if (!sameSecret(bearerToken(request.headers.authorization), key)) throw unauthorized();
}
