import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeRandomCheckpoint, type RandomDType } from '../model/weights/random-checkpoint.js';
import { PRESETS, withNumLayers, type RawConfig } from '../model/weights/random-presets.js';
import { WEIGHT_LAYOUTS, type WeightLayout } from '../model/weights/weight-layouts.js';
import { intOption, numberOption, requireString, UsageError, type Command } from './command.js';

const DTYPES: readonly RandomDType[] = ['bf16', 'f32', 'fp8', 'mxfp8'];

/** A preset name, a config.json file, or a checkpoint folder holding one. */
export function resolveConfig(arg: string): RawConfig {
  const preset = PRESETS[arg];
  if (preset) return preset();
  const path = existsSync(arg) && statSync(arg).isDirectory() ? join(arg, 'config.json') : arg;
  if (!existsSync(path)) {
    throw new UsageError(
      `--config: "${arg}" is neither a preset (${Object.keys(PRESETS).join(', ')}) nor a file`,
    );
  }
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as RawConfig;
  } catch (e) {
    throw new UsageError(`--config: ${path}: ${(e as Error).message}`);
  }
}

function formatGb(bytes: number): string {
  return `${(bytes / 1e9).toFixed(2)} GB`;
}

export const initRandomCommand: Command = {
  name: 'init-random',
  summary:
    'Write a checkpoint with random weights (config.json + safetensors, sharded when large) for a preset or a config file.',
  usage:
    '--config minimax-m3|tiny|FILE --out DIR [--num-layers N] [--dtype bf16] [--layout a|b|vl|hf-native|fused]',
  options: {
    config: {
      type: 'string',
      description: `preset (${Object.keys(PRESETS).join(', ')}), config.json, or a folder with one`,
      valueName: 'PRESET|FILE',
    },
    out: { type: 'string', description: 'output directory', valueName: 'DIR' },
    dtype: { type: 'string', default: 'bf16', description: DTYPES.join(', ') },
    layout: {
      type: 'string',
      default: 'a',
      description:
        'tensor names and config dialect: a (MiniMax), b (transformers per-expert), vl (b under model.language_model.), hf-native (transformers 5.x save_pretrained), fused (transformers gate_up_proj / stacked experts)',
    },
    'num-layers': {
      type: 'string',
      description: 'decoder layers to keep (per-layer lists keep their first entries); default all',
      valueName: 'N',
    },
    seed: { type: 'string', default: '0', description: 'random seed', valueName: 'S' },
    'shard-gb': {
      type: 'string',
      default: '4',
      description: 'maximum shard size in GB (1e9 bytes)',
      valueName: 'GB',
    },
  },
  async run(values) {
    const dtype = String(values['dtype']) as RandomDType;
    if (!DTYPES.includes(dtype))
      throw new UsageError(`--dtype must be one of ${DTYPES.join(', ')}`);
    const layout = String(values['layout']) as WeightLayout;
    if (!WEIGHT_LAYOUTS.includes(layout))
      throw new UsageError(`--layout must be one of ${WEIGHT_LAYOUTS.join(', ')}`);
    let config = resolveConfig(requireString(values, 'config'));
    const numLayers = intOption(values, 'num-layers', 0);
    if (values['num-layers'] !== undefined) {
      if (numLayers < 1) throw new UsageError('--num-layers must be at least 1');
      config = withNumLayers(config, numLayers);
    }
    const shardGb = numberOption(values, 'shard-gb', 4);
    if (shardGb <= 0) throw new UsageError('--shard-gb must be positive');
    const out = requireString(values, 'out');
    const start = performance.now();
    let lastReport = 0;
    const result = writeRandomCheckpoint({
      config,
      outDir: out,
      dtype,
      layout,
      seed: intOption(values, 'seed', 0),
      maxShardBytes: shardGb * 1e9,
      onProgress: (written, total) => {
        const now = performance.now();
        if (now - lastReport < 2000) return;
        lastReport = now;
        process.stderr.write(`init-random: ${formatGb(written)} / ${formatGb(total)}\n`);
      },
    });
    const secs = (performance.now() - start) / 1000;
    console.log(
      `init-random: wrote ${result.numTensors} tensors, ${formatGb(result.totalBytes)} in ` +
        `${result.files.length} file(s) to ${out} (${result.config.numLayers} layers, ${dtype}${layout === 'a' ? '' : `, layout ${layout}`}) ` +
        `in ${secs.toFixed(1)} s (${(result.totalBytes / 1e9 / secs).toFixed(2)} GB/s)`,
    );
  },
};
