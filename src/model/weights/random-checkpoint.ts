import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelConfig, type ModelConfig } from '../../config/model-config.js';
import { numel } from '../../tensor/shape.js';
import { INDEX_FILE, SINGLE_FILE } from './checkpoint.js';
import { SCALE_SUFFIX } from './canonical-name.js';
import { quantizeRows, type Fp8Format } from './fp8-quantize.js';
import { modelTensors, type ModelTensorSpec } from './model-tensors.js';
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

/** A canonical tensor and the stored tensors it becomes (the weight, maybe its scales). */
interface Unit {
  readonly spec: ModelTensorSpec;
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
  const raw = withStorage(o.config, dtype);
  const config = parseModelConfig(raw, 'init-random config');
  const units = modelTensors(config).map((s) => toUnit(s, dtype));
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
      for (const u of shard) {
        writeUnit(w, u, dtype, o.seed ?? 0, (n) => {
          written += n;
          o.onProgress?.(written, totalBytes);
        });
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

function toUnit(spec: ModelTensorSpec, dtype: RandomDType): Unit {
  let headers: TensorHeader[];
  if (spec.role === 'router' || spec.role === 'bias' || dtype === 'f32') {
    headers = [{ name: spec.name, dtype: 'F32', shape: spec.shape }];
  } else if ((dtype === 'fp8' || dtype === 'mxfp8') && spec.quantizable) {
    const [out, inn] = spec.shape as [number, number];
    const [bo, bi] = FP8_BLOCK[dtype];
    headers = [
      { name: spec.name, dtype: 'F8_E4M3', shape: spec.shape },
      {
        name: `${spec.name}${SCALE_SUFFIX}`,
        dtype: dtype === 'fp8' ? 'F32' : 'U8',
        shape: [Math.ceil(out / bo), Math.ceil(inn / bi)],
      },
    ];
  } else {
    headers = [{ name: spec.name, dtype: 'BF16', shape: spec.shape }];
  }
  return { spec, headers, bytes: headers.reduce((n, h) => n + tensorBytes(h), 0) };
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
export function initOf(spec: ModelTensorSpec): { std: number; mean: number } {
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

function writeUnit(
  w: SafetensorsWriter,
  u: Unit,
  dtype: RandomDType,
  seed: number,
  progress: (bytes: number) => void,
): void {
  const rng = new RandomSource(seed, u.spec.name);
  const { std, mean } = initOf(u.spec);
  const shape = u.spec.shape;
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
  const elemBytes = tensorBytes(u.headers[0]!) / numel(shape);
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
  if (quant) {
    for (const s of scales) w.append(s);
    progress(tensorBytes(u.headers[1]!));
  }
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
