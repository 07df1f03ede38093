import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadModelConfig, type ModelConfig } from '../../config/model-config.js';
import { sameShape, shapeStr } from '../../tensor/shape.js';
import type { HostTensor } from '../../tensor/tensor.js';
import { canonicalName, SCALE_SUFFIX } from './canonical-name.js';
import { applyBlockScales, blockRange, e8m0ToF32 } from './fp8-dequant.js';
import { decodeToF32, type StDType } from './safetensors-dtype.js';
import { SafetensorsError, SafetensorsFile, type TensorEntry } from './safetensors-file.js';

export interface ReadOptions {
  /** The full shape the caller expects; checked before reading. */
  readonly expectShape?: readonly number[];
  /** [start, count) of dim 0; only that part is read from disk. */
  readonly rows?: [number, number];
  /** [start, count) of dim 1; only that part is read from disk. */
  readonly cols?: [number, number];
}

/** Where a canonical tensor lives and how it is stored. */
export interface TensorInfo {
  readonly name: string;
  readonly rawName: string;
  readonly file: string;
  readonly dtype: StDType;
  readonly shape: readonly number[];
  /** Absolute byte offset of element 0 in `file`. */
  readonly offset: number;
  /** The raw name of the `weight_scale_inv` companion of an FP8 weight. */
  readonly scaleName?: string;
}

/** A model checkpoint directory, addressed by canonical tensor names (layout A, no VL prefix). */
export interface Checkpoint {
  readonly dir: string;
  readonly config: ModelConfig;
  /** True when the canonical name is present. */
  has(name: string): boolean;
  /** Canonical names present; MTP, vision and `*_scale_inv` tensors are not listed. */
  names(): string[];
  /** Storage details of a canonical tensor (throws when missing). */
  info(name: string): TensorInfo;
  /**
   * Reads a tensor dequantized to float32. `rows`/`cols` select a [start, count) slice of
   * dim 0 / dim 1 (for tensor parallelism: only that slice is read from disk). expectShape
   * (full shape) is checked when given.
   */
  read(name: string, o?: ReadOptions): HostTensor;
  close(): void;
}

interface Located {
  readonly file: SafetensorsFile;
  readonly raw: string;
}

interface Slot {
  readonly weight: Located;
  scale?: Located;
}

export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_FILE = 'model.safetensors';

/** Opens `<dir>/model.safetensors` or the shards listed in `<dir>/model.safetensors.index.json`. */
export function openCheckpoint(dir: string): Checkpoint {
  const config = loadModelConfig(dir);
  const { files, located, source } = openFiles(dir);
  try {
    return new SafetensorsCheckpoint(dir, config, files, buildSlots(located, config), source);
  } catch (e) {
    for (const f of files) f.close();
    throw e;
  }
}

function openFiles(dir: string): { files: SafetensorsFile[]; located: Located[]; source: string } {
  const indexPath = join(dir, INDEX_FILE);
  if (existsSync(indexPath)) return openSharded(dir, indexPath);
  const single = join(dir, SINGLE_FILE);
  const paths = existsSync(single)
    ? [single]
    : readdirSync(dir)
        .filter((f) => f.endsWith('.safetensors'))
        .sort()
        .map((f) => join(dir, f));
  if (paths.length === 0) {
    throw new SafetensorsError(`${dir}: no ${SINGLE_FILE}, ${INDEX_FILE} or *.safetensors files`);
  }
  const files = openAll(paths);
  const located = files.flatMap((file) => file.names().map((raw) => ({ file, raw })));
  return { files, located, source: paths.length === 1 ? paths[0]! : dir };
}

function openSharded(
  dir: string,
  indexPath: string,
): { files: SafetensorsFile[]; located: Located[]; source: string } {
  let map: Record<string, unknown>;
  try {
    const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map?: unknown };
    if (!index.weight_map || typeof index.weight_map !== 'object')
      throw new Error('no "weight_map" object');
    map = index.weight_map as Record<string, unknown>;
  } catch (e) {
    throw new SafetensorsError(`${indexPath}: ${(e as Error).message}`);
  }
  const shardNames = [...new Set(Object.values(map))];
  const bad = shardNames.find((s) => typeof s !== 'string' || s.includes('/') || s.includes('\\'));
  if (bad !== undefined)
    throw new SafetensorsError(`${indexPath}: bad shard file name ${JSON.stringify(bad)}`);
  const files = openAll((shardNames as string[]).map((s) => join(dir, s)));
  const byShard = new Map(files.map((f) => [basename(f.path), f]));
  const located: Located[] = [];
  for (const [raw, shard] of Object.entries(map)) {
    const file = byShard.get(shard as string)!;
    if (!file.has(raw)) {
      for (const f of files) f.close();
      throw new SafetensorsError(
        `${indexPath}: tensor "${raw}" is mapped to ${file.path}, which does not contain it`,
      );
    }
    located.push({ file, raw });
  }
  return { files, located, source: indexPath };
}

function openAll(paths: string[]): SafetensorsFile[] {
  const files: SafetensorsFile[] = [];
  try {
    for (const p of paths) files.push(SafetensorsFile.open(p));
  } catch (e) {
    for (const f of files) f.close();
    throw e;
  }
  return files;
}

function buildSlots(located: Located[], config: ModelConfig): Map<string, Slot> {
  const slots = new Map<string, Slot>();
  const scales = new Map<string, Located>();
  for (const loc of located) {
    const name = canonicalName(loc.raw, config);
    if (name === null) continue;
    if (name.endsWith(SCALE_SUFFIX)) {
      scales.set(name.slice(0, -SCALE_SUFFIX.length), loc);
      continue;
    }
    const prev = slots.get(name);
    if (prev) {
      throw new SafetensorsError(
        `${loc.file.path}: tensor "${loc.raw}" and "${prev.weight.raw}" (${prev.weight.file.path}) both map to "${name}"`,
      );
    }
    slots.set(name, { weight: loc });
  }
  for (const [name, loc] of scales) {
    const slot = slots.get(name);
    if (slot) slot.scale = loc;
  }
  return slots;
}

class SafetensorsCheckpoint implements Checkpoint {
  constructor(
    readonly dir: string,
    readonly config: ModelConfig,
    private readonly files: SafetensorsFile[],
    private readonly slots: ReadonlyMap<string, Slot>,
    private readonly source: string,
  ) {}

  has(name: string): boolean {
    return this.slots.has(name);
  }

  names(): string[] {
    return [...this.slots.keys()];
  }

  info(name: string): TensorInfo {
    const slot = this.slot(name);
    const e = slot.weight.file.entry(slot.weight.raw);
    return {
      name,
      rawName: e.name,
      file: slot.weight.file.path,
      dtype: e.dtype,
      shape: e.shape,
      offset: e.offset,
      ...(slot.scale ? { scaleName: slot.scale.raw } : {}),
    };
  }

  read(name: string, o: ReadOptions = {}): HostTensor {
    const slot = this.slot(name);
    const { file, raw } = slot.weight;
    const e = file.entry(raw);
    const label = raw === name ? `"${raw}"` : `"${raw}" (${name})`;
    if (o.expectShape && !sameShape(e.shape, o.expectShape)) {
      throw new SafetensorsError(
        `${file.path}: tensor ${label} has shape ${shapeStr(e.shape)}, expected ${shapeStr(o.expectShape)}`,
      );
    }
    const slice = { rows: o.rows, cols: o.cols };
    if (e.dtype !== 'F8_E4M3') return file.read(raw, slice);
    if (!slot.scale) {
      throw new SafetensorsError(
        `${file.path}: F8_E4M3 tensor ${label} has no ${raw}${SCALE_SUFFIX} companion`,
      );
    }
    return this.dequantize(slot.weight, e, slot.scale, label, o);
  }

  close(): void {
    for (const f of this.files) f.close();
  }

  private slot(name: string): Slot {
    const slot = this.slots.get(name);
    if (!slot) throw new SafetensorsError(`${this.source}: tensor "${name}" not found`);
    return slot;
  }

  private dequantize(
    weight: Located,
    e: TensorEntry,
    scaleLoc: Located,
    label: string,
    o: ReadOptions,
  ): HostTensor {
    const path = scaleLoc.file.path;
    const se = scaleLoc.file.entry(scaleLoc.raw);
    if (e.shape.length !== 2) {
      throw new SafetensorsError(
        `${path}: quantized tensor ${label} must be 2-D, got ${shapeStr(e.shape)}`,
      );
    }
    const [out, inn] = e.shape as [number, number];
    const block = this.blockSize(se.dtype);
    const want = [Math.ceil(out / block[0]), Math.ceil(inn / block[1])];
    if (!sameShape(se.shape, want)) {
      throw new SafetensorsError(
        `${path}: scale tensor "${se.name}" of ${label} has shape ${shapeStr(se.shape)}, expected ${shapeStr(want)} for block ${shapeStr(block)}`,
      );
    }
    const rows = o.rows ?? [0, out];
    const cols = o.cols ?? [0, inn];
    const t = weight.file.read(weight.raw, { rows: o.rows, cols: o.cols });
    const sRows = blockRange(rows, block[0]);
    const sCols = blockRange(cols, block[1]);
    const raw = scaleLoc.file.readBytes(se.name, { rows: sRows, cols: sCols }).bytes;
    const values = se.dtype === 'U8' ? e8m0ToF32(raw) : decodeToF32(se.dtype, raw);
    applyBlockScales(t.data, { r0: rows[0], rn: rows[1], c0: cols[0], cn: cols[1] }, block, {
      values,
      cols: sCols[1],
      row0: sRows[0],
      col0: sCols[0],
    });
    return t;
  }

  /** U8 scales are MXFP8 E8M0 exponents; float scales are block FP8 (DeepSeek/MiniMax-M2 style). */
  private blockSize(scaleDtype: StDType): readonly [number, number] {
    const q = this.config.quantization;
    if (scaleDtype === 'U8') return q.method === 'mxfp8' ? q.blockSize : [1, 32];
    return q.method === 'fp8' ? q.blockSize : [128, 128];
  }
}
