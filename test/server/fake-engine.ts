import type {
  Engine,
  EngineEvent,
  EngineStats,
  GenerateRequest,
} from '../../src/engine/engine-types.js';

/** What the fake engine answers for one request. */
export interface FakeScript {
  /** Token ids to emit, in order (an EOS id among them ends the request with "stop"). */
  readonly tokens: readonly number[];
  /** Emit an error event instead of tokens. */
  readonly error?: string;
  /** Throw from the iterator after this many tokens (a crashing engine). */
  readonly throwAfter?: number;
  /** Milliseconds between tokens (default: the engine's). */
  readonly delayMs?: number;
  /** Emit without any timer between tokens (as fast as the consumer pulls). */
  readonly burst?: boolean;
}

export interface FakeEngineOptions {
  readonly maxModelLen?: number;
  readonly delayMs?: number;
  readonly eosId?: number;
  readonly cachedTokens?: number;
  readonly respond?: (req: GenerateRequest) => FakeScript;
}

const PAGE_SIZE = 16;

/** Resolves after `ms`, or as soon as `signal` aborts (then with true). */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A scripted Engine: emits the tokens its `respond` function picks, one per `delayMs`, honours
 * maxTokens, stop/EOS ids and abort, and keeps the bookkeeping tests assert on (requests seen,
 * aborted ids, running count, KV pages in use).
 */
export class FakeEngine implements Engine {
  readonly maxModelLen: number;
  readonly requests: GenerateRequest[] = [];
  readonly aborted: string[] = [];
  readonly finished: string[] = [];
  running = 0;
  maxRunning = 0;
  pagesUsed = 0;
  shutdownCalled = false;
  private readonly o: FakeEngineOptions;

  constructor(o: FakeEngineOptions = {}) {
    this.o = o;
    this.maxModelLen = o.maxModelLen ?? 256;
  }

  get eosId(): number {
    return this.o.eosId ?? 65_536;
  }

  stats(): EngineStats {
    return {
      numRunning: this.running,
      numWaiting: 0,
      kvPagesUsed: this.pagesUsed,
      kvPagesTotal: 1024,
      prefixCacheHitTokens: 7,
      promptTokensTotal: 0,
    };
  }

  async shutdown(): Promise<void> {
    this.shutdownCalled = true;
  }

  async *generate(req: GenerateRequest, signal?: AbortSignal): AsyncIterable<EngineEvent> {
    this.requests.push(req);
    const pages = Math.ceil((req.promptIds.length + req.maxTokens) / PAGE_SIZE);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.pagesUsed += pages;
    try {
      yield* this.emit(req, signal);
    } finally {
      this.running--;
      this.pagesUsed -= pages;
    }
  }

  private finish(req: GenerateRequest, reason: 'stop' | 'length' | 'abort', n: number) {
    (reason === 'abort' ? this.aborted : this.finished).push(req.id);
    return {
      type: 'finish' as const,
      reason,
      promptTokens: req.promptIds.length,
      completionTokens: n,
      cachedTokens: this.o.cachedTokens ?? 0,
    };
  }

  private async *emit(req: GenerateRequest, signal?: AbortSignal): AsyncIterable<EngineEvent> {
    const script = this.o.respond?.(req) ?? { tokens: [] };
    if (script.error !== undefined) {
      yield { type: 'error', message: script.error };
      return;
    }
    let n = 0;
    for (const id of script.tokens) {
      if (n >= req.maxTokens) break;
      const stopped = script.burst
        ? (signal?.aborted ?? false)
        : await sleep(script.delayMs ?? this.o.delayMs ?? 0, signal);
      if (stopped) {
        yield this.finish(req, 'abort', n);
        return;
      }
      if (script.throwAfter !== undefined && n >= script.throwAfter) throw new Error('kaboom');
      n++;
      const isStopToken = req.stopTokenIds.includes(id) || (!req.ignoreEos && id === this.eosId);
      yield this.token(req, id, n, isStopToken);
      if (isStopToken) {
        yield this.finish(req, 'stop', n);
        return;
      }
    }
    yield this.finish(req, 'length', n);
  }

  private token(req: GenerateRequest, id: number, n: number, isStopToken: boolean): EngineEvent {
    const logprob = -0.5 * (n % 3);
    return {
      type: 'token',
      tokenId: id,
      isStopToken,
      ...(req.logprobs !== null && {
        logprob,
        topLogprobs: [
          { tokenId: id, logprob },
          { tokenId: 'x'.charCodeAt(0), logprob: logprob - 1 },
          { tokenId: 'y'.charCodeAt(0), logprob: logprob - 2 },
        ].slice(0, req.logprobs),
      }),
      ...(req.returnRoutedExperts && { routedExperts: { '3': [n % 8, 9, 10, 11] } }),
    };
  }
}
