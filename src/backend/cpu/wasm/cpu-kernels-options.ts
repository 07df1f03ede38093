/** Below this many flops a kernel runs on the calling thread alone (a job costs a few µs). */
const MIN_PARALLEL_FLOPS = 200_000;
/**
 * From this many flops a job is split over the threads, waking sleeping workers; below it, it
 * runs on the caller alone (a handoff costs a few µs). At 300 kFLOP a decode B=1 step splits
 * its GEMVs from the q/k/v projections up (~15 µs each on one thread), which come often enough
 * (each layer) that the worker stays awake spinning between them. Measured on session 13's
 * Zen 5 VM, B=1 ctx 256 on 2 threads, against 4 MFLOP (where no B=1 job split): 0.52-0.58 →
 * 0.42-0.49 ms a step (faster in 23-24 of 24 block pairs, three runs); B=8 −4%, B=1 ctx 4,000
 * −3%, B=32 even; with a CPU hog on the other core +2% (ThreadMode then mostly runs solo).
 * At 600 kFLOP B=1 gained nothing: its few larger jobs came too far apart, so each woke a
 * sleeping worker. (Sessions 5-7 measured splitting B=1 1.5-3× slower at load 6-9, before
 * ThreadMode timed the threaded jobs against solo ones.)
 */
const MIN_WAKE_FLOPS = 300_000;
/**
 * From this many bytes of K and V in a step's sequences (beyond half of a 2 MB L2) attention
 * units touch their rows before reading them (attention.wat's $touch): the rows then come
 * from DRAM or L3 many lines at a time. Below it they are mostly cached (a prefill of 512
 * tokens: 0.5 MB) and touching only adds loads.
 */
const TOUCH_MIN_BYTES = 1 << 20;

export interface CpuKernelsOptions {
  /** Threads the kernels use, the caller's included (default 1). */
  readonly threads?: number;
  /**
   * Kernels of fewer flops run on the calling thread alone (default 200k: a job costs a few
   * µs). Tests set 0 so that every kernel of a small model is split.
   */
  readonly minParallelFlops?: number;
  /**
   * Kernels of fewer flops run on the calling thread alone; from it they wake the workers and
   * split (default MIN_WAKE_FLOPS, 300k, when minParallelFlops is not set, else
   * minParallelFlops, so tests that split every kernel also wake the workers).
   */
  readonly minWakeFlops?: number;
  /**
   * The packed matmul and the attention kernels (their dot products and weighted sums) with
   * fused multiply-add (relaxed SIMD; default: where this process has it, see
   * fusedMultiplyAdd) or with a multiply then an add (false). Either way each output is the
   * same fixed chain of operations, the same bits at any thread count; the two differ in
   * rounding (one per step against two).
   */
  readonly fma?: boolean;
  /**
   * Choose by measurement whether splittable jobs use the worker threads or the caller alone
   * (ThreadMode; default: on unless minParallelFlops is set, so tests that split every kernel
   * always exercise the workers). Outputs are the same bits either way.
   */
  readonly adaptiveThreads?: boolean;
  /**
   * Attention touches each unit's cache rows before reading them from this many bytes of K
   * and V in the step's sequences (default TOUCH_MIN_BYTES; tests set 0 or Infinity).
   * Touching only loads: the outputs are the same bits either way.
   */
  readonly attentionTouchMinBytes?: number;
}

/** CpuKernelsOptions' thresholds with their defaults filled in. */
export interface KernelThresholds {
  readonly threads: number;
  readonly minParallelFlops: number;
  readonly minWakeFlops: number;
  readonly touchMinBytes: number;
  /** Whether ThreadMode chooses between the workers and the caller (adaptiveThreads). */
  readonly adaptive: boolean;
}

/** The options' thresholds, defaults filled in; throws on a thread count out of range. */
export function kernelThresholds(o: CpuKernelsOptions): KernelThresholds {
  const threads = o.threads ?? 1;
  if (!Number.isInteger(threads) || threads < 1 || threads > 256)
    throw new Error(`CPU threads: ${threads} is not an integer in 1..256`);
  return {
    threads,
    minParallelFlops: o.minParallelFlops ?? MIN_PARALLEL_FLOPS,
    minWakeFlops: o.minWakeFlops ?? o.minParallelFlops ?? MIN_WAKE_FLOPS,
    touchMinBytes: o.attentionTouchMinBytes ?? TOUCH_MIN_BYTES,
    adaptive: threads > 1 && (o.adaptiveThreads ?? o.minParallelFlops === undefined),
  };
}
