import type { ModelConfig } from '../../config/model-config.js';
import type { Fp8Scaling } from '../../tensor/fp8-weight.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { ReadOptions } from './checkpoint.js';
import type { LoadProgress } from './load-progress.js';

/** What a load moved: the tensors filled and their bytes as stored (checkpoint dtype). */
export interface LoadStats {
  readonly tensors: number;
  readonly bytes: number;
  readonly seconds: number;
  /** True for `--load-format dummy` (random weights, no files read). */
  readonly dummy: boolean;
}

/**
 * Where weights come from. The model's weight builder allocates each tensor and asks the
 * source to `fill` it (a slice of a canonical tensor, as `Checkpoint.read` would return it);
 * the tensors hold their values once `load` resolves. Sources: a checkpoint on disk
 * (CheckpointWeightSource) or random weights of the config's shapes (DummyWeightSource).
 */
export interface WeightSource {
  readonly config: ModelConfig;
  has(name: string): boolean;
  /**
   * How `name` is stored when it is FP8 (null otherwise): a backend that keeps FP8 weights
   * allocates an Fp8Weight for it, which `fill` then receives codes and scales as stored.
   */
  fp8Scaling(name: string): Fp8Scaling | null;
  /** Schedules `dst` (same element count as the slice) to receive the slice `o` of `name`. */
  fill(dst: Tensor, name: string, o: ReadOptions): void;
  /** Fills everything scheduled; rejects with one line naming the file and tensor on bad data. */
  load(progress?: LoadProgress): Promise<LoadStats>;
}
