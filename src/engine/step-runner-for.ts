import { HostSamplingRunner } from './host-sampling-runner.js';
import { M3ModelRunner } from './m3-model-runner.js';
import type { ModelRunner } from './model-runner.js';
import type { StepRunner } from './step-runner.js';

export interface StepRunnerOptions {
  /** Never capture CUDA graphs (vLLM's --enforce-eager). */
  readonly enforceEager?: boolean;
  /** Largest padded decode batch captured as a CUDA graph (vLLM's --cuda-graph-max-bs). */
  readonly cudaGraphMaxBs?: number;
  /** The engine's --max-num-seqs: graphs are captured up to it (and the sampler sized for it). */
  readonly maxNumSeqs?: number;
}

/**
 * The engine's runner for a loaded model: on one CUDA device, the CUDA runner (sampling on
 * the GPU, decode from CUDA graphs); anywhere else (the CPU backend, a tensor-parallel group)
 * the logits runner with the host sampler behind the same contract.
 */
export async function stepRunnerFor(
  runner: ModelRunner,
  o: StepRunnerOptions = {},
): Promise<StepRunner> {
  if (runner instanceof M3ModelRunner && runner.model.backend.name === 'cuda') {
    const { CudaStepRunner } = await import('./cuda-step-runner.js');
    if (CudaStepRunner.supports(runner)) return new CudaStepRunner(runner, o);
  }
  return new HostSamplingRunner(runner);
}
