import type { ForwardBatch, SeqInBatch } from '../backend/forward-batch.js';
import { Request } from '../scheduler/request.js';
import { type BatchPlan, Scheduler } from '../scheduler/scheduler.js';
import { AsyncQueue } from './async-queue.js';
import { type EngineConfig, resolveEngineConfig } from './engine-config.js';
import { finishEvent, routedExpertsOf, tokenEvent } from './engine-events.js';
import type {
  Engine,
  EngineEvent,
  EngineStats,
  FinishEvent,
  GenerateRequest,
} from './engine-types.js';
import { countAllowed } from './logits-constraint.js';
import { PromptLogprobCollector } from './prompt-logprobs.js';
import { randomSeed } from './rng.js';
import { checkSamplingParams, type SampleResult } from './sampler.js';
import type { RowSampling, SequenceSampling, StepResult, StepRunner } from './step-runner.js';

/** How often a step blocked only by paused sequences is retried. */
const PAUSED_RETRY_MS = 10;

/** A request the engine is serving: scheduler state plus what only the engine needs. */
interface Live {
  readonly req: Request;
  readonly gen: GenerateRequest;
  readonly sampling: SequenceSampling;
  readonly events: AsyncQueue<EngineEvent>;
  readonly stopIds: ReadonlySet<number>;
  /** min(maxTokens, maxModelLen - prompt length); 0 only when scoring the prompt. */
  readonly maxNewTokens: number;
  /** Set while prompt logprobs are still being collected. */
  promptLogprobs: PromptLogprobCollector | null;
  /** When its consumer stopped reading (events.size reached the bound); null while reading. */
  pausedAt: number | null;
}

/**
 * Continuous-batching engine over a StepRunner. One step = schedule, one forward with
 * sampling (on the runner's device), emit. Steps run back to back on the event loop with a
 * setImmediate between them, so I/O (HTTP writes of the tokens just emitted, aborts) is
 * served between steps even when the forward is synchronous CPU work: each step's tokens
 * reach their sockets as their own SSE events before the next step starts.
 */
export class LlmEngine implements Engine {
  readonly config: EngineConfig;
  private readonly scheduler: Scheduler;
  private readonly live = new Map<string, Live>();
  private accepting = true;
  /** A step is queued or running. */
  private busy = false;
  private idleWaiters: (() => void)[] = [];
  private shutdownPromise: Promise<void> | null = null;
  /** Pending check that gives a long-paused sequence's pages back. */
  private pauseTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly runner: StepRunner,
    config: Partial<EngineConfig> = {},
  ) {
    this.config = resolveEngineConfig(runner, config);
    this.scheduler = new Scheduler({
      numPages: runner.numPages,
      pageSize: runner.pageSize,
      maxNumSeqs: this.config.maxNumSeqs,
      maxNumBatchedTokens: this.config.maxNumBatchedTokens,
      enablePrefixCaching: this.config.enablePrefixCaching,
      maxGroupShare: this.config.maxRequestShare,
    });
  }

  get maxModelLen(): number {
    return this.config.maxModelLen;
  }

  async *generate(gen: GenerateRequest, signal?: AbortSignal): AsyncIterable<EngineEvent> {
    const error = this.check(gen);
    if (error !== null) {
      yield { type: 'error', message: error };
      return;
    }
    const maxNewTokens = Math.min(gen.maxTokens, this.maxModelLen - gen.promptIds.length);
    const scoring = (gen.promptLogprobs ?? null) !== null;
    if (signal?.aborted || maxNewTokens < 0 || (maxNewTokens === 0 && !scoring)) {
      yield finishEvent(signal?.aborted ? 'abort' : 'length', gen.promptIds.length, 0, 0);
      return;
    }
    const live = this.start(gen, maxNewTokens);
    const onAbort = () => this.end(live, 'abort');
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      yield* live.events;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // The consumer stopped reading early: free everything at once.
      this.end(live, 'abort');
    }
  }

  stats(): EngineStats {
    const s = this.scheduler.stats;
    return {
      numRunning: this.scheduler.numRunning,
      numWaiting: this.scheduler.numWaiting,
      kvPagesUsed: this.scheduler.allocator.numUsed,
      kvPagesTotal: this.scheduler.allocator.numPages,
      prefixCacheHitTokens: s.prefixHitTokens,
      promptTokensTotal: s.promptTokens,
      numPreemptions: s.numPreemptions,
      kvPagesCached: this.scheduler.prefixCache?.numCachedFree() ?? 0,
      ...(this.runner.memory && { memory: this.runner.memory }),
    };
  }

  shutdown(): Promise<void> {
    this.shutdownPromise ??= (async () => {
      this.accepting = false;
      await this.whenIdle();
      await this.runner.close?.();
    })();
    return this.shutdownPromise;
  }

  /** Resolves once no request is live and no step is running. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Forgets all prefix-cache labels (a "flush cache" endpoint); running requests are unaffected. */
  resetPrefixCache(): void {
    this.scheduler.prefixCache?.clear();
  }

  checkIntegrity(): void {
    this.scheduler.checkIntegrity();
    if (this.live.size !== this.scheduler.numRunning + this.scheduler.numWaiting) {
      throw new Error(`LlmEngine: ${this.live.size} live requests, scheduler holds fewer or more`);
    }
  }

  private check(gen: GenerateRequest): string | null {
    if (!this.accepting) return 'the engine is shutting down';
    if (this.live.has(gen.id)) return `request id ${gen.id} is already in flight`;
    const n = gen.promptIds.length;
    if (n === 0) return 'the prompt is empty';
    if (n > this.maxModelLen) {
      return `the prompt has ${n} tokens, more than the context limit of ${this.maxModelLen}`;
    }
    const V = this.runner.vocabSize;
    const bad = gen.promptIds.find((t) => !Number.isInteger(t) || t < 0 || t >= V);
    if (bad !== undefined) return `prompt token id ${bad} is outside the vocabulary [0, ${V})`;
    if (!Number.isInteger(gen.maxTokens) || gen.maxTokens < 0) {
      return `max_tokens must be a non-negative integer, got ${gen.maxTokens}`;
    }
    const maxTop = Math.min(V, this.runner.maxTopLogprobs);
    if (
      gen.logprobs !== null &&
      !(Number.isInteger(gen.logprobs) && gen.logprobs >= 0 && gen.logprobs <= maxTop)
    ) {
      return `logprobs must be an integer in [0, ${maxTop}], got ${gen.logprobs}`;
    }
    const sampling = checkSamplingParams(gen.sampling);
    if (sampling !== null) return sampling;
    const biased = gen.sampling.logitBias?.find(([t]) => t >= V);
    if (biased) return `logit_bias token id ${biased[0]} is outside the vocabulary [0, ${V})`;
    const pl = gen.promptLogprobs ?? null;
    if (pl !== null && !(Number.isInteger(pl) && pl >= 0 && pl <= V)) {
      return `prompt_logprobs must be an integer in [0, ${V}], got ${pl}`;
    }
    // The last sampled token never enters the KV cache.
    const maxKvTokens = Math.min(n + gen.maxTokens, this.maxModelLen) - 1;
    const pages = this.scheduler.pagesFor(maxKvTokens);
    if (pages > this.runner.numPages) {
      return `the request may need ${pages} KV pages, the cache has ${this.runner.numPages}`;
    }
    return null;
  }

  private start(gen: GenerateRequest, maxNewTokens: number): Live {
    const stopIds = new Set(gen.stopTokenIds);
    if (!gen.ignoreEos) for (const t of this.runner.eosTokenIds) stopIds.add(t);
    const numTop = gen.promptLogprobs ?? null;
    const live: Live = {
      req: new Request(gen.id, gen.promptIds, numTop !== null, gen.group ?? gen.id),
      gen,
      sampling: this.runner.openSampling(
        gen.sampling,
        gen.promptIds,
        gen.sampling.seed ?? randomSeed(),
      ),
      events: new AsyncQueue(() => this.onEventTaken(live)),
      stopIds,
      maxNewTokens,
      promptLogprobs: numTop === null ? null : new PromptLogprobCollector(gen.promptIds, numTop),
      pausedAt: null,
    };
    this.live.set(gen.id, live);
    this.flushPromptLogprobs(live);
    this.scheduler.add(live.req);
    this.kick();
    return live;
  }

  /** Finishes a live request once: frees its pages, sends the last event, closes its stream. */
  private end(live: Live, reason: FinishEvent['reason'] | { error: string }): void {
    if (this.live.get(live.req.id) !== live) return;
    this.live.delete(live.req.id);
    const cached = live.req.numCachedPromptTokens;
    this.scheduler.finish(live.req);
    live.sampling.release();
    if (!live.events.isClosed) {
      const n = live.req.promptIds.length;
      const done = live.req.outputIds.length;
      live.events.push(
        typeof reason === 'string'
          ? finishEvent(reason, n, done, cached)
          : { type: 'error', message: reason.error },
      );
      live.events.close();
    }
    this.notifyIdle();
  }

  private kick(): void {
    if (this.busy) return;
    this.updatePaused();
    if (!this.scheduler.hasRunnableWork) return;
    this.busy = true;
    setImmediate(() => void this.loop());
  }

  /**
   * Backpressure: a sequence whose consumer leaves maxUnreadEvents unread is paused (not
   * scheduled, so its queue stops growing), and after pausePreemptMs gives its KV pages
   * back. The server closes a response that stays unread past its stall timeout, which
   * aborts the sequence.
   */
  private updatePaused(): void {
    const now = performance.now();
    let nextDue = Infinity;
    for (const live of this.live.values()) {
      const full = live.events.size >= this.config.maxUnreadEvents;
      live.req.paused = full;
      if (!full) {
        live.pausedAt = null;
        continue;
      }
      live.pausedAt ??= now;
      if (live.req.status !== 'running') continue;
      const due = live.pausedAt + this.config.pausePreemptMs;
      if (now >= due) this.scheduler.preemptRequest(live.req);
      else nextDue = Math.min(nextDue, due);
    }
    // Nothing may step again before then (everyone else idle or paused): come back for it.
    if (nextDue < Infinity && this.pauseTimer === null) {
      this.pauseTimer = setTimeout(() => {
        this.pauseTimer = null;
        this.kick();
      }, nextDue - now);
      this.pauseTimer.unref();
    }
  }

  /** The consumer caught up with a paused sequence: schedule it again. */
  private onEventTaken(live: Live): void {
    if (live.req.paused && live.events.size < this.config.maxUnreadEvents / 2) this.kick();
  }

  /**
   * Runs steps while work remains. With a runner whose steps wait on a device without
   * blocking the thread (`overlapsHost`), step N+1 is launched, synchronously, before step N's
   * events reach their consumers, so the HTTP writes of N happen while the device runs N+1.
   * A synchronous runner ends the run after each step: `kick` then yields a macrotask
   * (setImmediate) so I/O is served between steps.
   */
  private async loop(): Promise<void> {
    try {
      let tail = await this.step();
      while (tail) tail = (await tail.next) as { next: Promise<unknown> } | null;
    } catch (e) {
      // A bug outside the forward: fail everyone rather than leave streams hanging.
      const message = `engine step failed: ${(e as Error).message}`;
      for (const live of [...this.live.values()]) this.end(live, { error: message });
    } finally {
      this.busy = false;
      this.kick();
      this.notifyIdle();
    }
  }

  private async step(): Promise<{ next: Promise<unknown> } | null> {
    const plan = this.scheduler.schedule();
    if (plan.seqs.length === 0) {
      // Paused sequences hold the room the rest need: wait for their consumers to read, or
      // for pausePreemptMs to give their pages back, without spinning.
      if ([...this.live.values()].some((l) => l.req.paused))
        return new Promise<null>((resolve) => setTimeout(() => resolve(null), PAUSED_RETRY_MS));
      throw new Error('the scheduler planned an empty step with work queued');
    }
    const batch = this.buildBatch(plan);
    // Constraints finish their next masks while the forward runs (off the critical path when
    // the forward waits on a device); the runner reads the masks once `ready` resolves.
    const failed: { req: Request; error: string }[] = [];
    const ready = this.prepareConstraints(plan, failed);
    const rows = this.rowSampling(plan, batch, failed);
    let out: StepResult;
    try {
      out = await this.runner.step(batch, rows, ready);
      this.checkOutput(batch, rows, out);
    } catch (e) {
      await ready;
      const message = `model forward failed: ${(e as Error).message}`;
      for (const s of plan.seqs) this.endById(s.req, { error: message });
      return null;
    }
    for (const f of failed) this.endById(f.req, { error: f.error });
    this.scheduler.commit(plan);
    this.emitTokens(plan, batch, out);
    if (this.config.checkIntegrity) this.checkIntegrity();
    // Wrapped, not returned: a returned promise would be adopted, chaining every step.
    return this.runner.overlapsHost && this.scheduler.hasWork ? { next: this.step() } : null;
  }

  private buildBatch(plan: BatchPlan): ForwardBatch {
    const tokenIds = new Int32Array(plan.numTokens);
    let t = 0;
    const seqs = plan.seqs.map((s) => {
      s.req.copyTokens(s.numCached, s.numCached + s.numNew, tokenIds, t);
      t += s.numNew;
      const all = this.live.get(s.req.id)?.promptLogprobs?.wants(s.numCached, s.numNew);
      return {
        numCached: s.numCached,
        numNew: s.numNew,
        pageTable: Int32Array.from(s.req.pageIds),
        ...(all ? { allLogits: true } : {}),
      };
    });
    const capture = plan.seqs.some(
      (s) => s.sample && this.live.get(s.req.id)?.gen.returnRoutedExperts,
    );
    return {
      tokenIds,
      seqs,
      pageSize: this.runner.pageSize,
      logitsFor: 'last',
      ...(capture ? { captureRoutedExperts: true } : {}),
    };
  }

  /** Awaits the sampling rows' constraint work; records the requests whose constraint failed. */
  private async prepareConstraints(
    plan: BatchPlan,
    failed: { req: Request; error: string }[],
  ): Promise<void> {
    await Promise.all(
      plan.seqs.map(async (s) => {
        const c = s.sample ? this.live.get(s.req.id)?.gen.constraint : undefined;
        try {
          await c?.prepare?.();
        } catch (e) {
          failed.push({ req: s.req, error: `logits constraint failed: ${(e as Error).message}` });
        }
      }),
    );
  }

  /**
   * One entry per logits row (one per sequence; every new token of an `allLogits` sequence):
   * how to sample it, or null. Only a sequence's last row is ever sampled.
   */
  private rowSampling(
    plan: BatchPlan,
    batch: ForwardBatch,
    failed: { req: Request; error: string }[],
  ): (RowSampling | null)[] {
    const rows: (RowSampling | null)[] = [];
    plan.seqs.forEach((s, i) => {
      const n = batch.seqs[i]!.allLogits ? s.numNew : 1;
      for (let k = 1; k < n; k++) rows.push(null);
      const live = this.live.get(s.req.id);
      if (!s.sample || live?.req !== s.req || live.maxNewTokens === 0) {
        rows.push(null);
        return;
      }
      const c = live.gen.constraint;
      rows.push({
        seq: live.sampling,
        numLogprobs: live.gen.logprobs,
        ...(c ? { allowedMask: () => this.maskOf(live, failed) } : {}),
      });
    });
    return rows;
  }

  /** The constraint's mask for this step; a failing or empty one fails the request. */
  private maskOf(live: Live, failed: { req: Request; error: string }[]): Uint32Array | null {
    if (failed.some((f) => f.req === live.req)) return null;
    try {
      const mask = live.gen.constraint?.nextTokenMask() ?? null;
      if (mask !== null && countAllowed(mask, this.runner.vocabSize) === 0)
        throw new Error('the logits constraint allows no token');
      return mask;
    } catch (e) {
      failed.push({ req: live.req, error: `logits constraint failed: ${(e as Error).message}` });
      return null;
    }
  }

  private checkOutput(batch: ForwardBatch, rows: readonly (RowSampling | null)[], out: StepResult) {
    if (out.samples.length !== rows.length) {
      throw new Error(`runner returned ${out.samples.length} sample rows, expected ${rows.length}`);
    }
    const V = this.runner.vocabSize;
    rows.forEach((r, i) => {
      const got = out.samples[i];
      if (r && !got) throw new Error(`runner did not sample row ${i}`);
      if (got && !(Number.isInteger(got.tokenId) && got.tokenId >= 0 && got.tokenId < V))
        throw new Error(`runner sampled token ${got.tokenId}, outside the vocabulary [0, ${V})`);
    });
    if (batch.seqs.some((s) => s.allLogits) && out.logits?.length !== rows.length * V)
      throw new Error(`runner returned no or wrong host logits for a prompt-logprobs step`);
  }

  private emitTokens(plan: BatchPlan, batch: ForwardBatch, out: StepResult): void {
    const V = this.runner.vocabSize;
    let tokenEnd = 0;
    let rowEnd = 0;
    plan.seqs.forEach((s, i) => {
      tokenEnd += s.numNew;
      const seq: SeqInBatch = batch.seqs[i]!;
      const rowStart = rowEnd;
      rowEnd += seq.allLogits ? s.numNew : 1;
      const live = this.live.get(s.req.id);
      if (live?.req !== s.req || s.req.status !== 'running') return;
      if (seq.allLogits && out.logits) {
        const rows = out.logits.subarray(rowStart * V, rowEnd * V);
        live.promptLogprobs?.add(s.numCached, s.numNew, rows, V);
        this.flushPromptLogprobs(live);
      }
      if (!s.sample) return;
      if (live.maxNewTokens === 0) return this.end(live, 'length');
      const routed = live.gen.returnRoutedExperts
        ? routedExpertsOf(out, tokenEnd - 1, plan.numTokens)
        : undefined;
      this.emitSample(live, out.samples[rowEnd - 1]!, routed);
    });
  }

  /** Records one sampled token for `live` under its constraint and emits it (or ends it). */
  private emitSample(live: Live, r: SampleResult, routed: Record<string, number[]> | undefined) {
    const c = live.gen.constraint;
    try {
      c?.accept(r.tokenId);
    } catch (e) {
      return this.end(live, { error: `logits constraint failed: ${(e as Error).message}` });
    }
    live.req.outputIds.push(r.tokenId);
    const isStop = live.stopIds.has(r.tokenId);
    live.events.push(tokenEvent(r, isStop, routed));
    if (isStop || c?.isTerminated()) this.end(live, 'stop');
    else if (live.req.outputIds.length >= live.maxNewTokens) this.end(live, 'length');
  }

  /** Sends the prompt logprobs once all are in (before any token). */
  private flushPromptLogprobs(live: Live): void {
    const c = live.promptLogprobs;
    if (!c?.done) return;
    live.promptLogprobs = null;
    live.events.push({ type: 'prompt_logprobs', logprobs: c.result() });
  }

  private endById(req: Request, reason: { error: string }): void {
    const live = this.live.get(req.id);
    if (live?.req === req) this.end(live, reason);
  }

  private isIdle(): boolean {
    return this.live.size === 0 && !this.busy;
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
