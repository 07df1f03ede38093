import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Engine } from '../engine/engine-types.js';

const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
  160, 640, 2560,
];
const TPOT_BUCKETS = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
  20, 40, 80,
];
const E2E_BUCKETS = [
  0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960,
  1920, 7680,
];

/** One finished choice, as the handlers report it. */
export interface ChoiceTiming {
  /** Seconds from request arrival to the first token (null when none came). */
  readonly ttft: number | null;
  /** Seconds from request arrival to the finish. */
  readonly e2e: number;
  readonly completionTokens: number;
  readonly finishReason: string;
}

/**
 * The Prometheus metrics of one server instance, in its own registry (tests run several servers
 * in one process). Engine-side values (KV pages, queue lengths, prefix-cache hits) are read from
 * engine.stats() at scrape time, so they cannot drift from the engine's own state.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'endpoint' | 'status'>;
  private readonly finished: Counter<'finish_reason'>;
  private readonly promptTokens: Counter;
  private readonly generationTokens: Counter;
  private readonly ttft: Histogram;
  private readonly tpot: Histogram;
  private readonly e2e: Histogram;
  private readonly inFlight: Gauge;

  constructor(engine: Engine, processMetrics: boolean) {
    const registers = [this.registry];
    const p = 'moeserve_';
    this.requests = new Counter({
      name: `${p}http_requests_total`,
      help: 'HTTP requests by endpoint and status code (499: the client went away first)',
      labelNames: ['endpoint', 'status'],
      registers,
    });
    this.finished = new Counter({
      name: `${p}request_finish_total`,
      help: 'Finished generations (choices) by finish_reason',
      labelNames: ['finish_reason'],
      registers,
    });
    this.promptTokens = new Counter({
      name: `${p}prompt_tokens_total`,
      help: 'Prompt tokens of served requests',
      registers,
    });
    this.generationTokens = new Counter({
      name: `${p}generation_tokens_total`,
      help: 'Generated tokens',
      registers,
    });
    this.ttft = new Histogram({
      name: `${p}time_to_first_token_seconds`,
      help: 'Time from request arrival to the first generated token',
      buckets: TTFT_BUCKETS,
      registers,
    });
    this.tpot = new Histogram({
      name: `${p}time_per_output_token_seconds`,
      help: 'Mean time per output token after the first, per choice',
      buckets: TPOT_BUCKETS,
      registers,
    });
    this.e2e = new Histogram({
      name: `${p}e2e_request_latency_seconds`,
      help: 'Time from request arrival to the finish, per choice',
      buckets: E2E_BUCKETS,
      registers,
    });
    this.inFlight = new Gauge({
      name: `${p}http_requests_in_flight`,
      help: 'Generation requests the HTTP server is handling now',
      registers,
    });
    this.registerEngineGauges(engine, p);
    if (processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  private registerEngineGauges(engine: Engine, p: string): void {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name: `${p}${name}`,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    gauge('num_requests_running', 'Requests in the running batch', () => engine.stats().numRunning);
    gauge('num_requests_waiting', 'Requests queued', () => engine.stats().numWaiting);
    gauge('kv_pages_used', 'KV-cache pages in use', () => engine.stats().kvPagesUsed);
    gauge('kv_pages_total', 'KV-cache pages in all', () => engine.stats().kvPagesTotal);
    gauge('kv_pages_cached', 'Free pages holding a reusable prefix', () => {
      return engine.stats().kvPagesCached ?? 0;
    });
    const byDtype = (name: string, help: string, read: () => Readonly<Record<string, number>>) =>
      new Gauge({
        name: `${p}${name}`,
        help,
        labelNames: ['dtype'],
        registers,
        collect() {
          for (const [dtype, bytes] of Object.entries(read())) this.set({ dtype }, bytes);
        },
      });
    byDtype('model_weight_bytes', "Device memory of this rank's weights by storage dtype", () => {
      return engine.stats().memory?.weightBytes ?? {};
    });
    byDtype('kv_cache_bytes', 'Device memory of the KV cache by storage dtype', () => {
      return engine.stats().memory?.kvCacheBytes ?? {};
    });
    gauge('kv_cache_usage_ratio', 'Used fraction of the KV cache (0..1)', () => {
      const s = engine.stats();
      return s.kvPagesTotal > 0 ? s.kvPagesUsed / s.kvPagesTotal : 0;
    });
    const counter = (name: string, help: string, read: () => number) =>
      new Counter({
        name: `${p}${name}`,
        help,
        registers,
        // The engine keeps the running total; mirror it at scrape time.
        collect() {
          this.reset();
          this.inc(Math.max(0, read()));
        },
      });
    counter('prefix_cache_hit_tokens_total', 'Prompt tokens served from the prefix cache', () => {
      return engine.stats().prefixCacheHitTokens;
    });
    counter('num_preemptions_total', 'Running requests preempted for lack of KV pages', () => {
      return engine.stats().numPreemptions ?? 0;
    });
  }

  requestDone(endpoint: string, status: number): void {
    this.requests.inc({ endpoint, status: String(status) });
  }

  generationStarted(): void {
    this.inFlight.inc();
  }

  generationEnded(): void {
    this.inFlight.dec();
  }

  promptDone(promptTokens: number): void {
    this.promptTokens.inc(promptTokens);
  }

  choiceDone(t: ChoiceTiming): void {
    this.finished.inc({ finish_reason: t.finishReason });
    this.generationTokens.inc(t.completionTokens);
    this.e2e.observe(t.e2e);
    if (t.ttft === null) return;
    this.ttft.observe(t.ttft);
    if (t.completionTokens > 1) this.tpot.observe((t.e2e - t.ttft) / (t.completionTokens - 1));
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
