/** Small non-streaming calls the benchmark makes around runs. */

function join(baseUrl: string, path: string): string {
  return baseUrl.replace(/\/+$/, '') + path;
}

/** The first model id the server lists, as clients do when --model is omitted. */
export async function firstModelId(
  baseUrl: string,
  headers: Record<string, string> = {},
): Promise<string> {
  const url = join(baseUrl, '/v1/models');
  const res = await fetch(url, { headers }).catch((e: Error) => {
    const cause = (e.cause as Error | undefined)?.message ?? e.message;
    throw new Error(`cannot reach ${url} (${cause}); is the server up?`);
  });
  if (!res.ok) throw new Error(`GET /v1/models: HTTP ${res.status}; pass --model`);
  const body = (await res.json()) as { data?: { id?: string }[] };
  const id = body.data?.[0]?.id;
  if (!id) throw new Error('GET /v1/models listed no model; pass --model');
  return id;
}

/** SGLang's /flush_cache, else vLLM's /reset_prefix_cache; returns the path that worked. */
export async function flushCache(
  baseUrl: string,
  headers: Record<string, string> = {},
): Promise<string | undefined> {
  for (const path of ['/flush_cache', '/reset_prefix_cache']) {
    try {
      const res = await fetch(join(baseUrl, path), { method: 'POST', headers });
      if (res.ok) return path;
    } catch {
      // Try the other engine's endpoint.
    }
  }
  return undefined;
}
