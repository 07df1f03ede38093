import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { abusiveRequest } from './abusive-requests.js';

/**
 * HTTP soak against a running server: `concurrency` clients send a mix of chat and completion
 * requests, streaming and not, for `seconds`, cutting a share of them short (a stream dropped
 * after a few chunks, a plain request dropped after a few milliseconds). Then it waits for the
 * server to go idle and checks /metrics: no request running or waiting, no KV page in use, no
 * HTTP generation in flight, no 5xx; and reports the server's RSS growth over its warm level.
 *
 *   npm run soak:server -- --url http://127.0.0.1:8000 --seconds 600 [--concurrency 16]
 */
export interface HttpSoakOptions {
  readonly url: string;
  readonly seconds: number;
  readonly concurrency: number;
  /** Share of requests cut short by the client. */
  readonly abortRate: number;
  /** Share of abusive requests (src/tools/abusive-requests.ts) mixed in; default 0. */
  readonly abuseRate?: number;
  readonly maxTokens: number;
  readonly seed: number;
  readonly apiKey?: string;
  /** How long the server may take to go idle after the load stops. */
  readonly idleTimeoutS: number;
  /** Allowed RSS growth over the warm baseline (MiB); null: report only. */
  readonly rssSlackMiB: number | null;
  readonly log?: (line: string) => void;
}

export interface HttpSoakReport {
  readonly ok: boolean;
  readonly failures: string[];
  readonly requests: number;
  readonly cutShort: number;
  readonly statusCounts: Record<string, number>;
  readonly finishCounts: Record<string, number>;
  readonly completionTokens: number;
  readonly idle: Record<string, number>;
  readonly rssBaselineMiB: number;
  readonly rssAfterMiB: number;
  readonly rssGrowthMiB: number;
}

const IDLE_SERIES = [
  'moeserve_num_requests_running',
  'moeserve_num_requests_waiting',
  'moeserve_kv_pages_used',
  'moeserve_http_requests_in_flight',
];

/** mulberry32: a small seeded generator, so a failing mix can be replayed. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Prometheus text format -> series (name plus labels, as written) -> value. */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

class SoakClient {
  readonly statusCounts: Record<string, number> = {};
  readonly finishCounts: Record<string, number> = {};
  requests = 0;
  cutShort = 0;
  completionTokens = 0;
  private model = '';

  constructor(
    private readonly o: HttpSoakOptions,
    private readonly rand: () => number,
  ) {}

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json' };
    if (this.o.apiKey) h['authorization'] = `Bearer ${this.o.apiKey}`;
    return h;
  }

  async metrics(): Promise<Map<string, number>> {
    const r = await fetch(`${this.o.url}/metrics`);
    return parseMetrics(await r.text());
  }

  async init(): Promise<void> {
    const r = await fetch(`${this.o.url}/v1/models`, { headers: this.headers() });
    if (!r.ok) throw new Error(`GET /v1/models answered ${r.status}`);
    const body = (await r.json()) as { data: { id: string }[] };
    this.model = body.data[0]?.id ?? '';
  }

  /** A random request: chat or completion, streaming or not, varied lengths and sampling. */
  private randomBody(stream: boolean, chat: boolean): Record<string, unknown> {
    const words = Array.from({ length: 1 + Math.floor(this.rand() * 40) }, (_, i) => `w${i % 7}`);
    const body: Record<string, unknown> = {
      model: this.model,
      max_tokens: 1 + Math.floor(this.rand() * this.o.maxTokens),
      temperature: this.rand() < 0.5 ? 0 : 0.8,
      seed: Math.floor(this.rand() * 1000),
      stream,
    };
    if (stream) body['stream_options'] = { include_usage: true };
    if (this.rand() < 0.2) body['n'] = 2;
    if (this.rand() < 0.2) body['stop'] = ['w3', '\n\n'];
    if (this.rand() < 0.1) body['logprobs'] = chat ? true : 2;
    if (chat) body['messages'] = [{ role: 'user', content: words.join(' ') }];
    else body['prompt'] = words.join(' ');
    return body;
  }

  private count(status: string, finishes: readonly string[], tokens: number): void {
    this.statusCounts[status] = (this.statusCounts[status] ?? 0) + 1;
    for (const f of finishes) this.finishCounts[f] = (this.finishCounts[f] ?? 0) + 1;
    this.completionTokens += tokens;
  }

  /** Abusive requests whose answer was not the expected one, by kind and status. */
  readonly abuseFailures: Record<string, number> = {};

  /** One request; never throws (a dropped connection is counted as status "dropped"). */
  async one(): Promise<void> {
    if (this.rand() < (this.o.abuseRate ?? 0)) return this.abusive();
    const chat = this.rand() < 0.5;
    const stream = this.rand() < 0.7;
    const cut = this.rand() < this.o.abortRate;
    const ac = new AbortController();
    this.requests++;
    if (cut) this.cutShort++;
    const path = chat ? '/v1/chat/completions' : '/v1/completions';
    try {
      if (cut && !stream) setTimeout(() => ac.abort(), Math.floor(this.rand() * 50));
      const r = await fetch(`${this.o.url}${path}`, {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify(this.randomBody(stream, chat)),
        signal: ac.signal,
      });
      if (!r.ok || !stream) return await this.plain(r);
      await this.streamed(r, cut ? 1 + Math.floor(this.rand() * 8) : Infinity, ac);
    } catch {
      this.count(cut ? 'cut' : 'dropped', [], 0);
    }
  }

  private async abusive(): Promise<void> {
    this.requests++;
    const target = {
      url: this.o.url,
      model: this.model,
      ...(this.o.apiKey && { apiKey: this.o.apiKey }),
    };
    const r = await abusiveRequest(target, this.rand);
    this.count(`abuse:${r.kind}:${r.status}`, [], 0);
    if (!r.expected.includes(r.status)) {
      const k = `${r.kind}:${r.status}`;
      this.abuseFailures[k] = (this.abuseFailures[k] ?? 0) + 1;
    }
  }

  private async plain(r: Response): Promise<void> {
    const body = (await r.json()) as {
      choices?: { finish_reason: string }[];
      usage?: { completion_tokens: number };
    };
    const finishes = (body.choices ?? []).map((c) => c.finish_reason);
    this.count(String(r.status), finishes, body.usage?.completion_tokens ?? 0);
  }

  private async streamed(r: Response, keepChunks: number, ac: AbortController): Promise<void> {
    const reader = r.body!.getReader();
    const text = new TextDecoder();
    let buf = '';
    let chunks = 0;
    const finishes: string[] = [];
    let tokens = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += text.decode(value, { stream: true });
      const frames = buf.split('\n\n');
      buf = frames.pop()!;
      for (const f of frames) {
        if (!f.startsWith('data: ') || f === 'data: [DONE]') continue;
        const c = JSON.parse(f.slice(6)) as {
          choices: { finish_reason: string | null }[];
          usage?: { completion_tokens: number } | null;
        };
        for (const ch of c.choices) if (ch.finish_reason) finishes.push(ch.finish_reason);
        tokens = c.usage?.completion_tokens ?? tokens;
      }
      if (++chunks >= keepChunks) {
        ac.abort();
        return this.count('cut', [], 0);
      }
    }
    this.count('200', finishes, tokens);
  }
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

async function waitIdle(client: SoakClient, timeoutS: number): Promise<Map<string, number>> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const m = await client.metrics();
    if (IDLE_SERIES.every((s) => (m.get(s) ?? 0) === 0) || Date.now() > deadline) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function load(client: SoakClient, concurrency: number, untilMs: number): Promise<void> {
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < untilMs) await client.one();
    }),
  );
}

/** Runs the soak; the report's `ok` says whether the server came back to idle cleanly. */
export async function runHttpSoak(o: HttpSoakOptions): Promise<HttpSoakReport> {
  const log = o.log ?? (() => {});
  const client = new SoakClient(o, seeded(o.seed));
  await client.init();
  // Warm-up: a short burst first, so lazily grown buffers count as the baseline.
  await load(client, o.concurrency, Date.now() + Math.min(5, o.seconds / 10) * 1000);
  const baseline = await waitIdle(client, o.idleTimeoutS);
  const rss0 = baseline.get('process_resident_memory_bytes') ?? 0;
  log(`soak: warm RSS ${mib(rss0)} MiB; ${o.concurrency} clients for ${o.seconds} s`);
  const end = Date.now() + o.seconds * 1000;
  const ticker = setInterval(() => log(`soak: ${client.requests} requests`), 10_000);
  await load(client, o.concurrency, end).finally(() => clearInterval(ticker));
  const after = await waitIdle(client, o.idleTimeoutS);
  const rss1 = after.get('process_resident_memory_bytes') ?? 0;
  const failures: string[] = [];
  for (const s of IDLE_SERIES)
    if ((after.get(s) ?? 0) !== 0) failures.push(`${s} is ${after.get(s)} after the load stopped`);
  for (const [status, n] of Object.entries(client.statusCounts))
    if (status.startsWith('5') || status === 'dropped')
      failures.push(`${n} requests ended with ${status}`);
  for (const [what, n] of Object.entries(client.abuseFailures))
    failures.push(`${n} abusive requests got an unexpected answer (${what})`);
  const growth = mib(rss1 - rss0);
  if (o.rssSlackMiB !== null && rss0 > 0 && growth > o.rssSlackMiB)
    failures.push(`server RSS grew ${growth} MiB (slack ${o.rssSlackMiB} MiB)`);
  return {
    ok: failures.length === 0,
    failures,
    requests: client.requests,
    cutShort: client.cutShort,
    statusCounts: client.statusCounts,
    finishCounts: client.finishCounts,
    completionTokens: client.completionTokens,
    idle: Object.fromEntries(IDLE_SERIES.map((s) => [s, after.get(s) ?? NaN])),
    rssBaselineMiB: mib(rss0),
    rssAfterMiB: mib(rss1),
    rssGrowthMiB: growth,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:8000' },
      seconds: { type: 'string', default: '600' },
      concurrency: { type: 'string', default: '16' },
      'abort-rate': { type: 'string', default: '0.3' },
      'abuse-rate': { type: 'string', default: '0.1' },
      'max-tokens': { type: 'string', default: '64' },
      seed: { type: 'string', default: '0' },
      'api-key': { type: 'string' },
      'rss-slack-mib': { type: 'string', default: '256' },
    },
  });
  const report = await runHttpSoak({
    url: values.url,
    seconds: Number(values.seconds),
    concurrency: Number(values.concurrency),
    abortRate: Number(values['abort-rate']),
    abuseRate: Number(values['abuse-rate']),
    maxTokens: Number(values['max-tokens']),
    seed: Number(values.seed),
    ...(values['api-key'] !== undefined && { apiKey: values['api-key'] }),
    idleTimeoutS: 60,
    rssSlackMiB: Number(values['rss-slack-mib']),
    log: (line) => console.error(line),
  });
  console.log(JSON.stringify(report, null, 2));
  process.exitCode = report.ok ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    console.error(`soak: ${(e as Error).message}`);
    process.exitCode = 1;
  });
}
