import { LOAD_FORMATS, type LoadFormat } from '../model/load-model.js';
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
};

export function loadFormatOption(values: Record<string, unknown>): LoadFormat {
  const v = String(values['load-format'] ?? 'auto');
  if (!(LOAD_FORMATS as readonly string[]).includes(v))
    throw new UsageError(`--load-format must be one of ${LOAD_FORMATS.join(', ')} (got "${v}")`);
  return v as LoadFormat;
}

/** The progress bar (terminal) or progress lines (pipe) and the summary line, on stderr. */
export function stderrLoadProgress(): LoadProgress {
  return new StreamLoadProgress(process.stderr);
}
