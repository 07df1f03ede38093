/**
 * The real-dimension FP8 check: MiniMax-M3 at its real dimensions (3 dense + 1 MoE
 * layers, dummy weights made on the device) under `--quantization fp8` (linears, embedding and
 * LM head in block FP8), against the CPU backend on the same dequantized weights
 * (real-check.ts: a prefill of a few positions and two graph-replayed decode steps). The CPU
 * reference costs about 10 s per position plus copying the weights, so the prompt is short
 * (`gpu-check --only fp8-real`, not in the default set).
 */
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { MiniMaxM3Model } from '../../src/model/minimax-m3/minimax-m3-model.js';
import { quantizeModelWeights } from '../../src/model/minimax-m3/quantize-weights.js';
import { SingleRankCommunicator } from '../../src/parallel/communicator.js';
import type { Row } from './check-util.js';
import { realCheck } from './real-check.js';
import { buildGpuWeights, realConfig } from './real-model.js';

/** The bound for FP8 vs CPU per-position relative logit error. */
const LOGIT_LIMIT = 3e-2;

export async function checkFp8Real(gpu: CudaBackend, positions = 2): Promise<Row[]> {
  const cfg = realConfig(1);
  const weights = quantizeModelWeights(await buildGpuWeights(gpu, cfg, true), gpu);
  const model = new MiniMaxM3Model(cfg, weights, gpu, new SingleRankCommunicator());
  const r = (await realCheck(gpu, model, positions)) as {
    prefillMaxRel: number;
    prefillTop1Flips: string;
    decode: { rel: number; top1Flips: number; top1Checked: number }[];
  };
  const worst = Math.max(r.prefillMaxRel, ...r.decode.map((d) => d.rel));
  const flips = r.decode.reduce((n, d) => n + d.top1Flips, 0);
  return [
    {
      check: `real dims FP8 (3 dense + 1 MoE), ${positions} prefill positions + 2 decode steps: max rel logit err vs CPU`,
      value: worst.toExponential(2),
      limit: LOGIT_LIMIT.toExponential(0),
      pass: worst <= LOGIT_LIMIT,
    },
    {
      check: 'real dims FP8: top-1 flips where the margin exceeds the error (prefill; decode)',
      value: `${r.prefillTop1Flips}; ${flips}`,
      limit: '0',
      pass: r.prefillTop1Flips.startsWith('0/') && flips === 0,
    },
  ];
}
