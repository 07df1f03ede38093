import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadModelConfig, type ModelConfig } from '../../config/model-config.js';
import { sameShape, shapeStr } from '../../tensor/shape.js';
import type { HostTensor } from '../../tensor/tensor.js';
import { applyBlockScales, blockRange, e8m0ToF32 } from './fp8-dequant.js';
import { decodeToF32, ST_DTYPE_BYTES, type StDType } from './safetensors-dtype.js';
import { SafetensorsError, SafetensorsFile, type TensorEntry } from './safetensors-file.js';
import { buildSlots, describe, type Located, type Slot } from './checkpoint-slots.js';
import { readFp8Rows, type Fp8Rows } from './fp8-read.js';
import { WeightNames } from './weight-layouts.js';
import type { Fp8Scaling } from '../../tensor/fp8-weight.js';
import { SCALE_SUFFIX, type WeightSpec } from './weight-table.js';

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
  /**
   * Absolute byte offset of element 0 in `file`. A tensor inside a fused one (rows of a
   * `gate_up_proj`, one expert of a stacked tensor) is a contiguous run of rows: its own
   * offset and shape describe it like any stored tensor.
   */
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
   * Throws unless the tensor has shape `want`; the error names the file, the stored tensor
   * and, when `want` is the table's shape, the config fields it comes from.
   */
  checkShape(name: string, want: readonly number[]): void;
  /**
   * Reads a tensor dequantized to float32. `rows`/`cols` select a [start, count) slice of
   * dim 0 / dim 1 (for tensor parallelism: only that slice is read from disk). expectShape
   * (full shape) is checked when given.
   */
  read(name: string, o?: ReadOptions): HostTensor;
  /** How an F8_E4M3 tensor is scaled (by its scale's dtype and the config's block), else null. */
  fp8Scaling(name: string): Fp8Scaling | null;
  /** A slice of an F8_E4M3 tensor as stored: codes and per-row scales (fp8-read.ts). */
  readFp8(name: string, o?: ReadOptions): Fp8Rows;
  close(): void;
}

export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_FILE = 'model.safetensors';

/** Opens `<dir>/model.safetensors` or the shards listed in `<dir>/model.safetensors.index.json`. */
export function openCheckpoint(dir: string): Checkpoint {
  const config = loadModelConfig(dir);
  const { files, located, source } = openFiles(dir);
  try {
    const names = new WeightNames(config);
    return new SafetensorsCheckpoint(dir, config, files, buildSlots(located, names), source, names);
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

class SafetensorsCheckpoint implements Checkpoint {
  constructor(
    readonly dir: string,
    readonly config: ModelConfig,
    private readonly files: SafetensorsFile[],
    private readonly slots: ReadonlyMap<string, Slot>,
    private readonly source: string,
    private readonly weightNames: WeightNames,
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
      ...this.extent(slot, name, e),
      ...(slot.scale ? { scaleName: slot.scale.raw } : {}),
    };
  }

  read(name: string, o: ReadOptions = {}): HostTensor {
    const slot = this.slot(name);
    const { file, raw } = slot.weight;
    const e = file.entry(raw);
    const label = raw === name ? `"${raw}"` : `"${raw}" (${name})`;
    if (o.expectShape) this.checkShape(name, o.expectShape);
    if (slot.at) return this.readPart(slot, this.weightNames.specs.get(name)!, e, label, o);
    const slice = { rows: o.rows, cols: o.cols };
    if (e.dtype !== 'F8_E4M3') return file.read(raw, slice);
    return this.dequantize(slot, e, label, o);
  }

  fp8Scaling(name: string): Fp8Scaling | null {
    const slot = this.slot(name);
    if (slot.weight.file.entry(slot.weight.raw).dtype !== 'F8_E4M3' || !slot.scale) return null;
    const sd = slot.scale.file.entry(slot.scale.raw).dtype;
    const group = this.blockSize(sd)[1];
    return sd === 'U8' ? { kind: 'mx', group } : { kind: 'block', group };
  }

  readFp8(name: string, o: ReadOptions = {}): Fp8Rows {
    const slot = this.slot(name);
    const { file, raw } = slot.weight;
    const e = file.entry(raw);
    const label = raw === name ? `"${raw}"` : `"${raw}" (${name})`;
    if (e.dtype !== 'F8_E4M3')
      throw new SafetensorsError(`${file.path}: tensor ${label} is ${e.dtype}, not F8_E4M3`);
    if (o.expectShape) this.checkShape(name, o.expectShape);
    const shape = (slot.at ? this.weightNames.specs.get(name)!.shape : e.shape) as [number, number];
    if (shape.length !== 2)
      throw new SafetensorsError(
        `${file.path}: quantized tensor ${label} must be 2-D, got ${shapeStr(shape)}`,
      );
    const sd = slot.scale ? slot.scale.file.entry(slot.scale.raw).dtype : 'F32';
    return readFp8Rows({
      slot,
      shape,
      block: this.blockSize(sd),
      label,
      ...(o.rows && { rows: o.rows }),
      ...(o.cols && { cols: o.cols }),
    });
  }

  checkShape(name: string, want: readonly number[]): void {
    const slot = this.slot(name);
    const { file, raw } = slot.weight;
    const e = file.entry(raw);
    const label = raw === name ? `"${raw}"` : `"${raw}" (${name})`;
    // A fused tensor's shape was checked at open; its parts have the table's shapes.
    const have = slot.at ? this.weightNames.specs.get(name)!.shape : e.shape;
    if (sameShape(have, want)) return;
    const spec = this.weightNames.specs.get(name);
    const implied =
      spec && sameShape(spec.shape, want)
        ? `config.json implies ${describe(spec)}`
        : `expected ${shapeStr(want)}`;
    throw new SafetensorsError(
      `${slot.weight.file.path}: tensor ${label} has shape ${shapeStr(have)}, ${implied}`,
    );
  }

  /** Shape and byte offset of a stored tensor, or of the rows of a fused one it occupies. */
  private extent(
    slot: Slot,
    name: string,
    e: TensorEntry,
  ): { shape: readonly number[]; offset: number } {
    if (!slot.at) return { shape: e.shape, offset: e.offset };
    const shape = this.weightNames.specs.get(name)!.shape;
    const { index = 0, rowOffset, rawShape } = slot.at;
    const rowsBefore = index * (rawShape.length === 3 ? rawShape[1]! : 0) + rowOffset;
    return { shape, offset: e.offset + rowsBefore * shape[1]! * ST_DTYPE_BYTES[e.dtype] };
  }

  /** A tensor inside a fused one: rows offset in the stored matrix (of expert `index`). */
  private readPart(
    slot: Slot,
    spec: WeightSpec,
    e: TensorEntry,
    label: string,
    o: ReadOptions,
  ): HostTensor {
    const at = slot.at!;
    const [R, C] = spec.shape as [number, number];
    const [r0, rn] = o.rows ?? [0, R];
    const rows: [number, number] = [at.rowOffset + r0, rn];
    if (at.index === undefined) {
      const part = { ...o, rows, expectShape: undefined };
      if (e.dtype !== 'F8_E4M3') return slot.weight.file.read(slot.weight.raw, part);
      return this.dequantize(slot, e, label, part);
    }
    // [N, R', C] read as matrix `index`, rows `rows`; columns cut here (dim 2 on disk).
    const t = slot.weight.file.read(slot.weight.raw, { rows: [at.index, 1], cols: rows });
    if (e.dtype === 'F8_E4M3') this.scaleStacked(slot, e, label, at.index, rows, t.data);
    if (!o.cols) return { shape: [rn, C], data: t.data };
    const [c0, cn] = o.cols;
    const data = new Float32Array(rn * cn);
    for (let i = 0; i < rn; i++) data.set(t.data.subarray(i * C + c0, i * C + c0 + cn), i * cn);
    return { shape: [rn, cn], data };
  }

  close(): void {
    for (const f of this.files) f.close();
  }

  private slot(name: string): Slot {
    const slot = this.slots.get(name);
    if (!slot) throw new SafetensorsError(`${this.source}: tensor "${name}" not found`);
    return slot;
  }

  private dequantize(slot: Slot, e: TensorEntry, label: string, o: ReadOptions): HostTensor {
    const { weight, scale: scaleLoc } = slot;
    if (!scaleLoc) {
      throw new SafetensorsError(
        `${weight.file.path}: F8_E4M3 tensor ${label} has no ${weight.raw}${SCALE_SUFFIX} companion`,
      );
    }
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

  /**
   * In place: applies the scales of rows `rows` of matrix `index` of a stacked FP8 tensor
   * [N, R, C] (scales [N, ⌈R/bo⌉, ⌈C/bi⌉], transformers' `*_scale_inv` of fused experts).
   */
  private scaleStacked(
    slot: Slot,
    e: TensorEntry,
    label: string,
    index: number,
    rows: [number, number],
    w: Float32Array,
  ): void {
    const { weight, scale: scaleLoc } = slot;
    if (!scaleLoc) {
      throw new SafetensorsError(
        `${weight.file.path}: F8_E4M3 tensor ${label} has no ${weight.raw}${SCALE_SUFFIX} companion`,
      );
    }
    const se = scaleLoc.file.entry(scaleLoc.raw);
    const [N, R, C] = e.shape as [number, number, number];
    const block = this.blockSize(se.dtype);
    const want = [N, Math.ceil(R / block[0]), Math.ceil(C / block[1])];
    if (!sameShape(se.shape, want)) {
      throw new SafetensorsError(
        `${scaleLoc.file.path}: scale tensor "${se.name}" of ${label} has shape ${shapeStr(se.shape)}, expected ${shapeStr(want)} for block ${shapeStr(block)}`,
      );
    }
    const sRows = blockRange(rows, block[0]);
    const bytes = scaleLoc.file.readBytes(se.name, { rows: [index, 1], cols: sRows }).bytes;
    const values = se.dtype === 'U8' ? e8m0ToF32(bytes) : decodeToF32(se.dtype, bytes);
    applyBlockScales(w, { r0: rows[0], rn: rows[1], c0: 0, cn: C }, block, {
      values,
      cols: want[2]!,
      row0: sRows[0],
      col0: 0,
    });
  }

  /** U8 scales are MXFP8 E8M0 exponents; float scales are block FP8 (DeepSeek/MiniMax-M2 style). */
  private blockSize(scaleDtype: StDType): readonly [number, number] {
    const q = this.config.quantization;
    if (scaleDtype === 'U8') return q.method === 'mxfp8' ? q.blockSize : [1, 32];
    return q.method === 'fp8' ? q.blockSize : [128, 128];
  }
}
