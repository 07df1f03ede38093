import type { Backend } from '../../backend/backend.js';
import type { ForwardBatch } from '../../backend/forward-batch.js';
import type { ModelConfig } from '../../config/model-config.js';
import type { ForwardModel } from '../../model/forward-model.js';
import { freeKvCache, type KvCache, type KvCacheDtype } from '../../model/minimax-m3/kv-cache.js';
import type { ForwardOutput, MiniMaxM3Model } from '../../model/minimax-m3/minimax-m3-model.js';
import type { ParallelLayout } from '../../parallel/parallel-layout.js';
import type { FramedSocket } from '../../parallel/transport/framed-socket.js';
import { closeGroup, type ProcessGroup } from '../../parallel/transport/process-group.js';
import { CONTROL } from '../../parallel/transport/rendezvous.js';
import type { FailureWatch } from './failure-watch.js';
import type { LocalWorkers } from './local-workers.js';
import { abortComm, allReduceLoop, type ClosableCommunicator } from './rank-runtime.js';
import { decodeStatus, encodeStep, type StepMessage } from './step-messages.js';

/**
 * Rank 0 of a group, seen as one model: every call is sent to the other ranks as a typed step
 * message, then run on rank 0's own shard, whose collectives meet theirs. Any rank's failure
 * fails the call with an error naming that rank; `abort` then tears the group down.
 */
export class RankGroupDriver implements ForwardModel {
  private readonly cacheIds = new WeakMap<KvCache, number>();
  private nextCacheId = 0;
  private nextStepId = 0;
  private closed = false;

  constructor(
    readonly model: MiniMaxM3Model,
    readonly comm: ClosableCommunicator,
    private readonly group: ProcessGroup,
    private readonly watch: FailureWatch,
    private readonly workers: LocalWorkers,
  ) {}

  get cfg(): ModelConfig {
    return this.model.cfg;
  }

  /** Rank 0's backend; every rank runs the same kind. */
  get backend(): Backend {
    return this.model.backend;
  }

  /** Rank 0's layout; the others differ only in their rank. */
  get layout(): ParallelLayout {
    return this.model.layout;
  }

  /** Rank 0's KV dtype; every rank loads with the same `--kv-cache-dtype`. */
  get kvCacheDtype(): KvCacheDtype {
    return this.model.kvCacheDtype;
  }

  /** Rejects when any rank fails, even between steps (e.g. a worker killed while idle). */
  get failed(): Promise<never> {
    return this.watch.failed;
  }

  allocKv(numPages: number, pageSize: number): KvCache {
    const cacheId = this.nextCacheId++;
    this.send({ kind: 'alloc-kv', cacheId, numPages, pageSize });
    const kv = this.model.allocKv(numPages, pageSize);
    this.cacheIds.set(kv, cacheId);
    return kv;
  }

  freeKv(kv: KvCache): void {
    const cacheId = this.cacheIds.get(kv);
    if (cacheId === undefined) return;
    this.send({ kind: 'free-kv', cacheId });
    freeKvCache(this.model.backend, kv);
  }

  async forward(batch: ForwardBatch, kv: KvCache): Promise<ForwardOutput> {
    const cacheId = this.cacheIds.get(kv);
    if (cacheId === undefined)
      throw new Error('forward: this KV cache was not allocated by the group');
    try {
      const stepId = this.nextStepId++;
      this.send({ kind: 'forward', cacheId, stepId, batch });
      return await this.watch.race(this.model.forward(batch, kv));
    } catch (e) {
      throw await this.watch.explain(e);
    }
  }

  /** ms per all-reduce of `elems` elements, every rank looping in lockstep. */
  async benchAllReduce(
    elems: number,
    dtype: 'bf16' | 'f32',
    warmup: number,
    iters: number,
  ): Promise<number> {
    const m = { kind: 'allreduce-bench', elems, dtype, warmup, iters } as const;
    try {
      this.send(m);
      return await this.watch.race(allReduceLoop({ model: this.model, comm: this.comm }, m));
    } catch (e) {
      throw await this.watch.explain(e);
    }
  }

  /** Orderly end: every rank is told to shut down and exits; then the connections close. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.watch.failure) this.send({ kind: 'shutdown' });
    this.watch.stop();
    await this.workers.shutdown();
    this.comm.close();
    closeGroup(this.group);
  }

  /**
   * After a failure: kill this host's workers first (nothing here may wait on them), then
   * abort the communicator and drop every connection (other hosts' ranks exit).
   */
  async abort(): Promise<void> {
    this.closed = true;
    this.watch.stop();
    closeGroup(this.group);
    await this.workers.kill();
    abortComm(this.comm);
  }

  private send(m: StepMessage): void {
    if (this.watch.failure) throw this.watch.failure;
    const bytes = encodeStep(m);
    for (const c of this.group.control) c?.send(CONTROL.step, 0, bytes);
  }
}

/**
 * Reads every rank's status frames in the background: a "failed" status or a lost control
 * connection is reported to the watch. Resolves when every rank has said "ready".
 */
export function watchControl(
  control: readonly (FramedSocket | null)[],
  watch: FailureWatch,
): Promise<void> {
  const ready = control.map((c, rank) => {
    if (!c) return undefined;
    return new Promise<void>((resolve) => {
      void (async () => {
        for (;;) {
          const f = await c.next();
          if (f.kind !== CONTROL.status) continue;
          const s = decodeStatus(f.payload);
          if (s.kind === 'ready') resolve();
          else watch.report(s.rank, s.secondary ? 'connection' : 'status', s.message);
        }
      })().catch((e: Error) => watch.report(rank, 'connection', e.message));
    });
  });
  return Promise.all(ready).then(() => undefined);
}
