import { LOAD_FORMATS, type LoadFormat } from '../model/load-model.js';
import { QUANTIZATIONS, type Quantization } from '../model/minimax-m3/quantize-weights.js';
import { StreamLoadProgress, type LoadProgress } from '../model/weights/load-progress.js';
import { UsageError, type OptionSpec } from './command.js';

/** How weights are loaded (vLLM's flag names), for serve, forward and generate. */
export const LOAD_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  'load-format': {
    type: 'string',
    default: 'auto',
    description:
      'auto: read the safetensors checkpoint; dummy: random weights of its shapes built on the device from config.json alone (benchmarks)',
    valueName: LOAD_FORMATS.join('|'),
  },
  quantization: {
    type: 'string',
    description:
      "fp8: quantize a bf16 checkpoint's linear weights to block FP8 at load (E4M3, 128x128 blocks, scale amax/448); CUDA keeps them in FP8, the CPU computes on their dequantized values (default: none, weights as stored)",
    valueName: QUANTIZATIONS.join('|'),
  },
};

export function loadFormatOption(values: Record<string, unknown>): LoadFormat {
  const v = String(values['load-format'] ?? 'auto');
  if (!(LOAD_FORMATS as readonly string[]).includes(v))
    throw new UsageError(`--load-format must be one of ${LOAD_FORMATS.join(', ')} (got "${v}")`);
  return v as LoadFormat;
}

/** `--quantization`, or null when not given. */
export function quantizationOption(values: Record<string, unknown>): Quantization | null {
  const v = values['quantization'];
  if (v === undefined) return null;
  if (!(QUANTIZATIONS as readonly unknown[]).includes(v))
    throw new UsageError(
      `--quantization must be one of ${QUANTIZATIONS.join(', ')} (got "${String(v)}")`,
    );
  return v as Quantization;
}

/** The progress bar (terminal) or progress lines (pipe) and the summary line, on stderr. */
export function stderrLoadProgress(): LoadProgress {
  return new StreamLoadProgress(process.stderr);
}
