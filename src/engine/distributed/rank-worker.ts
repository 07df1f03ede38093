import { freeKvCache, type KvCache } from '../../model/minimax-m3/kv-cache.js';
import { PeerLostError } from '../../parallel/transport/framed-socket.js';
import { CONTROL } from '../../parallel/transport/rendezvous.js';
import { closeGroup, type ProcessGroup } from '../../parallel/transport/process-group.js';
import { withInjectedFault, type InjectedFault } from './fault-injection.js';
import { abortComm, allReduceLoop, createRankRuntime, type RankRuntime } from './rank-runtime.js';
import { decodeStep, encodeStatus, type StepMessage } from './step-messages.js';

export interface RankWorkerOptions {
  /** Test seam (withInjectedFault): fail this rank's chosen forward step. */
  readonly fault?: InjectedFault;
  /** Called as this rank enters each collective (its hang watchdog's `collective`). */
  readonly entered?: () => void;
  /** Called as a kernel compile starts and ends (the worker's hang watchdog). */
  readonly compiling?: (on: boolean) => void;
}

/**
 * The loop of every rank but 0: wait for rank 0's typed step messages on the control channel
 * and execute them in order (load, allocate KV pages, run a forward step whose collectives
 * meet rank 0's, free pages, shut down). Errors are reported to rank 0 as a "failed" status
 * naming this rank, then rethrown so the process exits non-zero.
 */
export async function runRankWorker(group: ProcessGroup, o: RankWorkerOptions = {}): Promise<void> {
  const control = group.control[0]!;
  let rt: RankRuntime | null = null;
  const caches = new Map<number, KvCache>();
  let failed = false;
  try {
    for (;;) {
      const frame = await control.next();
      if (frame.kind !== CONTROL.step) throw new Error(`unexpected control frame ${frame.kind}`);
      const msg: StepMessage = decodeStep(frame.payload);
      switch (msg.kind) {
        case 'init': {
          const base = await createRankRuntime(msg.spec, group, o.fault, o.entered, o.compiling);
          rt = { ...base, model: withInjectedFault(base.model, o.fault) };
          control.send(CONTROL.status, 0, encodeStatus({ kind: 'ready', rank: group.rank }));
          break;
        }
        case 'alloc-kv':
          caches.set(msg.cacheId, loaded(rt).model.allocKv(msg.numPages, msg.pageSize));
          break;
        case 'forward': {
          const kv = caches.get(msg.cacheId);
          if (!kv) throw new Error(`step ${msg.stepId}: unknown KV cache ${msg.cacheId}`);
          await loaded(rt).model.forward(msg.batch, kv);
          break;
        }
        case 'free-kv': {
          const kv = caches.get(msg.cacheId);
          if (kv) freeKvCache(loaded(rt).model.backend, kv);
          caches.delete(msg.cacheId);
          break;
        }
        case 'allreduce-bench':
          await allReduceLoop(loaded(rt), msg);
          break;
        case 'shutdown':
          return;
      }
    }
  } catch (e) {
    failed = true;
    const message = (e as Error).message;
    const secondary = e instanceof PeerLostError;
    if (!control.lost)
      control.send(
        CONTROL.status,
        0,
        encodeStatus({ kind: 'failed', rank: group.rank, message, secondary }),
      );
    throw e;
  } finally {
    closeGroup(group);
    if (rt && failed) abortComm(rt.comm);
    else rt?.comm.close();
  }
}

function loaded(rt: RankRuntime | null): RankRuntime {
  if (!rt) throw new Error('step message before init');
  return rt;
}
