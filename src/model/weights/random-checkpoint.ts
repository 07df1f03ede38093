import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toHfNativeConfig } from '../../config/hf-native-config.js';
import { parseModelConfig, type ModelConfig } from '../../config/model-config.js';
import { numel } from '../../tensor/shape.js';
import { INDEX_FILE, SINGLE_FILE } from './checkpoint.js';
import { quantizeRows, type Fp8Format } from './fp8-quantize.js';
import { placement, type WeightLayout } from './weight-layouts.js';
import { modelTensors, SCALE_SUFFIX, scaleShape, type WeightSpec } from './weight-table.js';
import { RandomSource } from './random-source.js';
import type { RawConfig } from './random-presets.js';
import { SafetensorsWriter, tensorBytes, type TensorHeader } from './safetensors-writer.js';

export type RandomDType = 'bf16' | 'f32' | Fp8Format;

export interface RandomCheckpointOptions {
  /** The config.json object to write (text or VL wrapper). */
  readonly config: RawConfig;
  readonly outDir: string;
  /** Storage of the weights; routers and biases are always F32. Default bf16. */
  readonly dtype?: RandomDType;
  /**
   * Tensor names and config dialect (weight-layouts.ts); default `a`. The values do not depend
   * on the layout: every layout of one seed holds the same model.
   */
  readonly layout?: WeightLayout;
  readonly seed?: number;
  /** Shard size limit in bytes (a single larger tensor gets a shard of its own). */
  readonly maxShardBytes?: number;
  /** Called after each written chunk with the bytes written so far. */
  readonly onProgress?: (written: number, total: number) => void;
}

export interface RandomCheckpointResult {
  readonly files: string[];
  readonly totalBytes: number;
  readonly numTensors: number;
  readonly config: ModelConfig;
}

/**
 * A stored tensor (the weight, maybe its scales) and the table tensors it holds in order:
 * one, or the rows of a fused tensor (gate then up, expert after expert).
 */
interface Unit {
  readonly parts: readonly WeightSpec[];
  readonly headers: TensorHeader[];
  readonly bytes: number;
}

const CHUNK_ELEMS = 1 << 21;
const FP8_BLOCK: Readonly<Record<Fp8Format, readonly [number, number]>> = {
  fp8: [128, 128],
  mxfp8: [1, 32],
};

/**
 * Writes config.json and random weights for every tensor of the config, streaming tensor by
 * tensor in row chunks, so checkpoints larger than memory can be written.
 */
export function writeRandomCheckpoint(o: RandomCheckpointOptions): RandomCheckpointResult {
  const dtype = o.dtype ?? 'bf16';
  const layout = o.layout ?? 'a';
  const withDtype = withStorage(o.config, dtype);
  const config = parseModelConfig(withDtype, 'init-random config');
  const raw = layoutConfig(withDtype, config, layout);
  const units = storedUnits(config, layout, dtype);
  const shards = splitShards(units, o.maxShardBytes ?? 4 * 2 ** 30);
  const totalBytes = units.reduce((n, u) => n + u.bytes, 0);
  mkdirSync(o.outDir, { recursive: true });
  writeFileSync(join(o.outDir, 'config.json'), `${JSON.stringify(raw, null, 2)}\n`);
  const names =
    shards.length === 1
      ? [SINGLE_FILE]
      : shards.map(
          (_, i) =>
            `model-${String(i + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`,
        );
  let written = 0;
  shards.forEach((shard, i) => {
    const w = SafetensorsWriter.create(
      join(o.outDir, names[i]!),
      shard.flatMap((u) => u.headers),
    );
    try {
      const progress = (n: number) => {
        written += n;
        o.onProgress?.(written, totalBytes);
      };
      for (const u of shard) {
        // Codes of every part, then their scales: the scale tensor's rows follow the weight's.
        const scales = u.parts.flatMap((spec) =>
          writePart(w, spec, u, dtype, o.seed ?? 0, progress),
        );
        for (const sc of scales) w.append(sc);
        if (u.headers[1]) progress(tensorBytes(u.headers[1]));
      }
    } finally {
      w.close();
    }
  });
  writeIndex(o.outDir, shards, names, totalBytes);
  return { files: names, totalBytes, numTensors: units.length, config };
}

/** Sets the config's quantization_config and torch_dtype to match the stored weights. */
function withStorage(config: RawConfig, dtype: RandomDType): RawConfig {
  const { quantization_config: _old, ...rest } = config;
  const out: RawConfig = { ...rest, torch_dtype: dtype === 'f32' ? 'float32' : 'bfloat16' };
  if (dtype === 'fp8') {
    out['quantization_config'] = {
      quant_method: 'fp8',
      fmt: 'e4m3',
      activation_scheme: 'dynamic',
      weight_block_size: FP8_BLOCK.fp8,
    };
  } else if (dtype === 'mxfp8') {
    out['quantization_config'] = { quant_method: 'mxfp8', weight_block_size: FP8_BLOCK.mxfp8 };
  }
  return out;
}

/** The config.json a layout is written with: VL layouts wrap the text config. */
function layoutConfig(raw: RawConfig, config: ModelConfig, layout: WeightLayout): RawConfig {
  if (layout === 'hf-native' || layout === 'fused') return toHfNativeConfig(config);
  if (layout !== 'vl' || raw['model_type'] === 'minimax_m3_vl') return raw;
  const { quantization_config: q, torch_dtype: dt, ...text } = raw;
  return {
    architectures: ['MiniMaxM3SparseForConditionalGeneration'],
    model_type: 'minimax_m3_vl',
    torch_dtype: dt,
    ...(q ? { quantization_config: q } : {}),
    text_config: { ...text, torch_dtype: dt },
  };
}

/** The stored tensors of `layout`, in checkpoint order, each with the table tensors it holds. */
function storedUnits(config: ModelConfig, layout: WeightLayout, dtype: RandomDType): Unit[] {
  const groups = new Map<
    string,
    { shape: readonly number[]; parts: { spec: WeightSpec; key: number }[] }
  >();
  for (const spec of modelTensors(config)) {
    const at = placement(spec, layout, config.numExperts);
    const g = groups.get(at.raw) ?? { shape: at.rawShape, parts: [] };
    g.parts.push({ spec, key: (at.index ?? 0) * 2 + (at.rowOffset > 0 ? 1 : 0) });
    groups.set(at.raw, g);
  }
  return [...groups].map(([name, g]) => {
    const parts = g.parts.sort((a, b) => a.key - b.key).map((p) => p.spec);
    // Parts are quantized one by one, so a fused tensor's scale blocks must not straddle them.
    const rowBlock = dtype === 'fp8' || dtype === 'mxfp8' ? FP8_BLOCK[dtype][0] : 1;
    if (parts.length > 1 && parts.some((p) => p.shape[0]! % rowBlock !== 0))
      throw new Error(
        `init-random: layout "${layout}" fuses ${parts[0]!.name} with ${parts[0]!.shape[0]} rows, not whole ${dtype} blocks of ${rowBlock} rows`,
      );
    return toUnit(name, g.shape, parts, dtype);
  });
}

function toUnit(
  name: string,
  shape: readonly number[],
  parts: WeightSpec[],
  dtype: RandomDType,
): Unit {
  const spec = parts[0]!;
  let headers: TensorHeader[];
  if (spec.role === 'router' || spec.role === 'bias' || dtype === 'f32') {
    headers = [{ name, dtype: 'F32', shape }];
  } else if ((dtype === 'fp8' || dtype === 'mxfp8') && spec.quantizable) {
    headers = [
      { name, dtype: 'F8_E4M3', shape },
      {
        name: `${name}${SCALE_SUFFIX}`,
        dtype: dtype === 'fp8' ? 'F32' : 'U8',
        shape: scaleShape(shape, FP8_BLOCK[dtype]),
      },
    ];
  } else {
    headers = [{ name, dtype: 'BF16', shape }];
  }
  return { parts, headers, bytes: headers.reduce((n, h) => n + tensorBytes(h), 0) };
}

function splitShards(units: Unit[], maxBytes: number): Unit[][] {
  const shards: Unit[][] = [[]];
  let size = 0;
  for (const u of units) {
    if (size > 0 && size + u.bytes > maxBytes) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1]!.push(u);
    size += u.bytes;
  }
  return shards;
}

/** Standard deviation and mean of a tensor's values, by role (Gemma norms store w of 1 + w). */
export function initOf(spec: WeightSpec): { std: number; mean: number } {
  const fanIn = spec.shape[1] ?? 1;
  switch (spec.role) {
    case 'embedding':
      return { std: spec.name === 'lm_head.weight' ? 1 / Math.sqrt(fanIn) : 1, mean: 0 };
    case 'norm':
      return { std: 0.05, mean: 0 };
    case 'bias':
      return { std: 0.01, mean: 0 };
    default:
      return { std: 1 / Math.sqrt(fanIn), mean: 0 };
  }
}

/**
 * Writes one table tensor's values (its rows of the stored tensor `u`), seeded by its name;
 * returns its FP8 scales, which the caller writes after every part's codes.
 */
function writePart(
  w: SafetensorsWriter,
  spec: WeightSpec,
  u: Unit,
  dtype: RandomDType,
  seed: number,
  progress: (bytes: number) => void,
): (Float32Array | Uint8Array)[] {
  const rng = new RandomSource(seed, spec.name);
  const { std, mean } = initOf(spec);
  const shape = spec.shape;
  const rows = shape.length > 1 ? shape[0]! : 1;
  const cols = numel(shape) / rows;
  const quant = u.headers.length > 1 ? (dtype as Fp8Format) : null;
  const rowBlock = quant === 'fp8' ? FP8_BLOCK.fp8[0] : 1;
  // Whole rows per chunk (whole row blocks for block FP8, whose scales span 128 rows).
  const chunkRows = rowBlock * Math.max(1, Math.floor(CHUNK_ELEMS / (cols * rowBlock)));
  const len = Math.min(rows, chunkRows) * cols;
  // BF16 weights come straight from the bf16 table: one pass, half the memory traffic.
  const buf = u.headers[0]!.dtype === 'BF16' ? new Uint16Array(len) : new Float32Array(len);
  const scales: (Float32Array | Uint8Array)[] = [];
  const elemBytes = tensorBytes(u.headers[0]!) / numel(u.headers[0]!.shape);
  for (let r = 0; r < rows; r += chunkRows) {
    const n = Math.min(chunkRows, rows - r);
    const part = buf.subarray(0, n * cols);
    if (part instanceof Uint16Array) {
      rng.fillUniformBf16(part, std, mean);
      w.append(part);
    } else if (quant) {
      rng.fillUniform(part, std, mean);
      const q = quantizeRows(part, n, cols, quant, FP8_BLOCK[quant]);
      w.append(q.codes);
      scales.push(q.scales);
    } else {
      rng.fillUniform(part, std, mean);
      w.append(part);
    }
    progress(n * cols * elemBytes);
  }
  return scales;
}

function writeIndex(dir: string, shards: Unit[][], names: string[], totalBytes: number): void {
  const indexPath = join(dir, INDEX_FILE);
  if (shards.length === 1) {
    // A stale index from an earlier run would take precedence over model.safetensors.
    if (existsSync(indexPath)) rmSync(indexPath);
    return;
  }
  const weightMap: Record<string, string> = {};
  shards.forEach((shard, i) => {
    for (const u of shard) for (const h of u.headers) weightMap[h.name] = names[i]!;
  });
  const index = { metadata: { total_size: totalBytes }, weight_map: weightMap };
  writeFileSync(indexPath, `${JSON.stringify(index, null, 2)}\n`);
}
