import { PageAllocator } from '../kv-cache/page-allocator.js';
import { PrefixCache } from '../kv-cache/prefix-cache.js';
import { FairShare } from './fair-share.js';
import type { Request } from './request.js';

export interface SchedulerConfig {
  readonly numPages: number;
  readonly pageSize: number;
  /** Most sequences in the running set. */
  readonly maxNumSeqs: number;
  /** Token budget of one step (decode tokens plus prefill chunks). */
  readonly maxNumBatchedTokens: number;
  readonly enablePrefixCaching: boolean;
  /**
   * Most of the batch slots and KV pages one request group may hold while another group
   * waits (1 = no limit).
   */
  readonly maxGroupShare?: number;
}

export interface ScheduledSeq {
  readonly req: Request;
  /** Tokens already in the KV cache before this step. */
  readonly numCached: number;
  readonly numNew: number;
  /** The chunk reaches the last known token, so its logits row gives the next token. */
  readonly sample: boolean;
}

export interface BatchPlan {
  /** In batch order: decodes, then continuing prefills, then newly admitted requests. */
  readonly seqs: readonly ScheduledSeq[];
  readonly numTokens: number;
  /** Requests moved back to the waiting queue this step (their pages are freed). */
  readonly preempted: readonly Request[];
}

export interface SchedulerCounters {
  numPreemptions: number;
  /** Prompt tokens served from the prefix cache, counted at first admission. */
  prefixHitTokens: number;
  /** Prompt tokens of admitted requests, counted at first admission. */
  promptTokens: number;
}

interface Planning {
  budget: number;
  readonly chosen: Map<Request, number>;
  readonly preempted: Request[];
}

/**
 * Continuous batching over a paged KV cache. `schedule` plans one step and allocates its pages;
 * the caller runs the forward, then calls `commit` with the same plan. Running decodes are
 * served first, then prefills continue in chunks within the token budget, then waiting
 * requests are admitted in arrival order (preempted ones first). When pages run out the most
 * recently admitted request is preempted: its pages are freed and it is recomputed later.
 */
export class Scheduler {
  readonly allocator: PageAllocator;
  readonly prefixCache: PrefixCache | null;
  private readonly waiting: Request[] = [];
  private readonly running: Request[] = [];
  private readonly counters: SchedulerCounters = {
    numPreemptions: 0,
    prefixHitTokens: 0,
    promptTokens: 0,
  };

  constructor(readonly config: SchedulerConfig) {
    for (const k of ['numPages', 'pageSize', 'maxNumSeqs', 'maxNumBatchedTokens'] as const) {
      if (!Number.isInteger(config[k]) || config[k] < 1) {
        throw new Error(`Scheduler: ${k} must be a positive integer, got ${config[k]}`);
      }
    }
    this.allocator = new PageAllocator(config.numPages);
    this.prefixCache = config.enablePrefixCaching ? new PrefixCache(this.allocator) : null;
  }

  get numRunning(): number {
    return this.running.length;
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  get hasWork(): boolean {
    return this.running.length + this.waiting.length > 0;
  }

  /** Some request could be scheduled (one that is not paused). */
  get hasRunnableWork(): boolean {
    return this.running.some((r) => !r.paused) || this.waiting.some((r) => !r.paused);
  }

  /** Moves a running request back to waiting and frees its pages (a stalled consumer). */
  preemptRequest(req: Request): void {
    if (req.status === 'running') this.preempt(req);
  }

  get stats(): Readonly<SchedulerCounters> {
    return this.counters;
  }

  pagesFor(numTokens: number): number {
    return Math.ceil(numTokens / this.config.pageSize);
  }

  add(req: Request): void {
    if (req.status !== 'waiting' || req.pageIds.length > 0) {
      throw new Error(`Scheduler: request ${req.id} is not fresh`);
    }
    this.waiting.push(req);
  }

  schedule(): BatchPlan {
    const p: Planning = {
      budget: this.config.maxNumBatchedTokens,
      chosen: new Map(),
      preempted: [],
    };
    const decoding = this.running.filter((r) => r.numPending === 1);
    const prefilling = this.running.filter((r) => r.numPending > 1);
    for (const r of [...decoding, ...prefilling]) {
      if (r.status !== 'running' || p.budget === 0 || r.numPending === 0 || r.paused) continue;
      const numNew = Math.min(r.numPending, p.budget);
      if (this.growOrPreempt(r, r.numComputed + numNew, p)) this.choose(r, numNew, p);
    }
    // After a preemption memory is tight; admitting now would only thrash.
    if (p.preempted.length === 0) this.admit(p);
    const seqs: ScheduledSeq[] = [];
    let numTokens = 0;
    for (const [req, numNew] of p.chosen) {
      seqs.push({ req, numCached: req.numComputed, numNew, sample: numNew === req.numPending });
      numTokens += numNew;
    }
    return { seqs, numTokens, preempted: p.preempted };
  }

  /** Records a finished forward step: KV now covers the scheduled tokens. */
  commit(plan: BatchPlan): void {
    for (const s of plan.seqs) {
      const r = s.req;
      // Aborted or preempted while the step ran: its pages are gone, nothing to record.
      if (r.status !== 'running' || r.numComputed !== s.numCached) continue;
      r.numComputed += s.numNew;
      this.labelFullPages(r);
    }
  }

  /** Removes a request wherever it is and frees its pages. Idempotent. */
  finish(req: Request): void {
    if (req.status === 'finished') return;
    const queue = req.status === 'running' ? this.running : this.waiting;
    const i = queue.indexOf(req);
    if (i < 0) throw new Error(`Scheduler: request ${req.id} is ${req.status} but not queued`);
    queue.splice(i, 1);
    this.releasePages(req);
    req.status = 'finished';
  }

  checkIntegrity(): void {
    this.allocator.checkIntegrity();
    this.prefixCache?.checkIntegrity();
    if (this.running.length > this.config.maxNumSeqs) {
      throw new Error(`Scheduler: ${this.running.length} running > maxNumSeqs`);
    }
    const holders = new Int32Array(this.config.numPages);
    for (const r of this.running) {
      if (r.status !== 'running') throw new Error(`Scheduler: ${r.id} in running is ${r.status}`);
      if (new Set(r.pageIds).size !== r.pageIds.length) {
        throw new Error(`Scheduler: ${r.id} lists a page twice`);
      }
      if (r.numComputed > r.numTokens || this.pagesFor(r.numComputed) > r.pageIds.length) {
        throw new Error(
          `Scheduler: ${r.id} has ${r.numComputed} computed tokens in ${r.pageIds.length} pages`,
        );
      }
      for (const page of r.pageIds) holders[page]!++;
    }
    for (const r of this.waiting) {
      if (r.status !== 'waiting' || r.pageIds.length > 0 || r.numComputed > 0) {
        throw new Error(`Scheduler: waiting ${r.id} holds KV (${r.status})`);
      }
    }
    for (let page = 0; page < this.config.numPages; page++) {
      if (holders[page] !== this.allocator.refCount(page)) {
        throw new Error(
          `Scheduler: page ${page} has ${holders[page]} holders, refCount ${this.allocator.refCount(page)}`,
        );
      }
    }
  }

  private choose(r: Request, numNew: number, p: Planning): void {
    p.chosen.set(r, numNew);
    p.budget -= numNew;
  }

  /** Grows r's page table to `numTokens`, preempting from the back of the running set. */
  private growOrPreempt(r: Request, numTokens: number, p: Planning): boolean {
    while (!this.grow(r, numTokens)) {
      const victim = this.running[this.running.length - 1]!;
      p.budget += p.chosen.get(victim) ?? 0;
      p.chosen.delete(victim);
      this.preempt(victim);
      p.preempted.push(victim);
      if (victim === r) return false;
    }
    return true;
  }

  private admit(p: Planning): void {
    const inflight = this.prefixCache ? this.inflightHashes(p) : null;
    const c = this.config;
    const fair = new FairShare(
      c.maxGroupShare ?? 1,
      c.maxNumSeqs,
      c.numPages,
      this.running,
      this.waiting,
      (n) => this.pagesFor(n),
    );
    let i = 0;
    while (i < this.waiting.length && p.budget > 0) {
      const r = this.waiting[i]!;
      if (r.paused || fair.mustYield(r)) {
        i++;
        continue;
      }
      if (this.running.length >= c.maxNumSeqs) {
        if (!this.preemptForShare(r, fair, p)) return;
        i = this.waiting.indexOf(r);
        continue;
      }
      this.matchPrefix(r);
      // Another sequence computes r's next page this step (n > 1, shared system prompts):
      // wait one step and reuse it instead of computing it twice.
      if (inflight && !r.skipPrefixCache && this.nextPageIn(r, inflight)) {
        this.releasePages(r);
        i++;
        continue;
      }
      const numNew = Math.min(r.numPending, p.budget);
      if (!this.grow(r, r.numComputed + numNew)) {
        this.releasePages(r);
        if (!this.preemptForShare(r, fair, p)) return;
        i = this.waiting.indexOf(r);
        continue;
      }
      this.waiting.splice(i, 1);
      this.start(r);
      fair.add(r);
      for (const h of this.pagesCompleted(r, numNew)) inflight?.add(h);
      this.choose(r, numNew, p);
    }
  }

  /**
   * Makes room for r by preempting the most recent sequence of another group that holds more
   * than its share; false when there is none (r then waits its turn).
   */
  private preemptForShare(r: Request, fair: FairShare, p: Planning): boolean {
    for (let j = this.running.length - 1; j >= 0; j--) {
      const victim = this.running[j]!;
      if (victim.group === r.group || !fair.isOver(victim.group)) continue;
      p.budget += p.chosen.get(victim) ?? 0;
      p.chosen.delete(victim);
      fair.remove(victim);
      this.preempt(victim);
      p.preempted.push(victim);
      return true;
    }
    return false;
  }

  private start(r: Request): void {
    r.status = 'running';
    this.running.push(r);
    if (r.admitted) return;
    r.admitted = true;
    r.numCachedPromptTokens = r.numComputed;
    this.counters.prefixHitTokens += r.numComputed;
    this.counters.promptTokens += r.promptIds.length;
  }

  private inflightHashes(p: Planning): Set<string> {
    const set = new Set<string>();
    for (const [r, numNew] of p.chosen) for (const h of this.pagesCompleted(r, numNew)) set.add(h);
    return set;
  }

  /** Hashes of the pages r fills this step that carry no label yet. */
  private pagesCompleted(r: Request, numNew: number): string[] {
    const end = Math.floor((r.numComputed + numNew) / this.config.pageSize);
    if (end <= r.numLabelledPages) return [];
    return r.pageHashes(end, this.config.pageSize).slice(r.numLabelledPages);
  }

  private nextPageIn(r: Request, hashes: ReadonlySet<string>): boolean {
    const S = this.config.pageSize;
    const next = r.pageIds.length; // right after a match: the matched pages, all full
    if ((next + 1) * S > r.numTokens - 1) return false;
    return hashes.has(r.pageHashes(next + 1, S)[next]!);
  }

  private grow(r: Request, numTokens: number): boolean {
    const need = this.pagesFor(numTokens) - r.pageIds.length;
    if (need <= 0) return true;
    if (this.allocator.numFree < need) return false;
    for (let i = 0; i < need; i++) r.pageIds.push(this.allocator.allocate());
    return true;
  }

  private preempt(r: Request): void {
    this.running.splice(this.running.indexOf(r), 1);
    this.releasePages(r);
    r.status = 'waiting';
    r.numPreemptions++;
    this.counters.numPreemptions++;
    this.waiting.unshift(r);
  }

  private matchPrefix(r: Request): void {
    if (!this.prefixCache || r.numComputed > 0 || r.skipPrefixCache) return;
    // Keep at least one token to compute: its logits give the next token.
    const numPages = Math.floor((r.numTokens - 1) / this.config.pageSize);
    const pages = this.prefixCache.match(r.pageHashes(numPages, this.config.pageSize));
    r.pageIds = pages;
    r.numComputed = pages.length * this.config.pageSize;
    r.numLabelledPages = pages.length;
  }

  private labelFullPages(r: Request): void {
    if (!this.prefixCache) return;
    const numFull = Math.floor(r.numComputed / this.config.pageSize);
    if (numFull <= r.numLabelledPages) return;
    const hashes = r.pageHashes(numFull, this.config.pageSize);
    for (let i = r.numLabelledPages; i < numFull; i++) {
      this.prefixCache.insert(hashes[i]!, r.pageIds[i]!);
    }
    r.numLabelledPages = numFull;
  }

  /** Releases the tail first so that, once free, the tail is evicted before the shared root. */
  private releasePages(r: Request): void {
    for (let i = r.pageIds.length - 1; i >= 0; i--) this.allocator.release(r.pageIds[i]!);
    r.pageIds = [];
    r.numComputed = 0;
    r.numLabelledPages = 0;
  }
}
