import type { ModelConfig } from '../../config/model-config.js';
import { sameShape, shapeStr } from '../../tensor/shape.js';
import { SafetensorsError, type SafetensorsFile } from './safetensors-file.js';
import type { Placement, Resolved, WeightNames } from './weight-layouts.js';
import { SCALE_SUFFIX, type WeightSpec } from './weight-table.js';

/** A stored tensor: the file holding it and its name there. */
export interface Located {
  readonly file: SafetensorsFile;
  readonly raw: string;
}

export interface Slot {
  readonly weight: Located;
  /** Set when the stored tensor is fused: where this tensor sits in it. */
  readonly at?: Placement;
  scale?: Located;
}

/**
 * Canonical name → where it is stored, for every stored tensor the layouts resolve; scale
 * companions attached to their weights. Checks, naming the file and tensor: two stored
 * tensors for one canonical one, a fused tensor whose shape the config does not imply, and
 * MLP / MoE / index tensors of a layer the config describes otherwise.
 */
export function buildSlots(located: Located[], names: WeightNames): Map<string, Slot> {
  const slots = new Map<string, Slot>();
  const scales = new Map<string, Located>();
  for (const loc of located) {
    if (loc.raw.endsWith(SCALE_SUFFIX)) {
      if (names.resolve(loc.raw) !== null) scales.set(loc.raw.slice(0, -SCALE_SUFFIX.length), loc);
      continue;
    }
    for (const r of names.resolve(loc.raw) ?? []) {
      const prev = slots.get(r.name);
      if (prev) {
        throw new SafetensorsError(
          `${loc.file.path}: tensor "${loc.raw}" and "${prev.weight.raw}" (${prev.weight.file.path}) both map to "${r.name}"`,
        );
      }
      if (r.at) checkFusedShape(loc, r, names);
      else if (!names.specs.has(r.name)) checkLayerKind(loc, r.name, names.config);
      slots.set(r.name, { weight: loc, ...(r.at ? { at: r.at } : {}) });
    }
  }
  for (const slot of slots.values()) {
    const scale = scales.get(slot.weight.raw);
    if (scale) slot.scale = scale;
  }
  return slots;
}

/** A fused tensor must have exactly the shape its parts' config sizes add up to. */
function checkFusedShape(loc: Located, r: Resolved, names: WeightNames): void {
  const e = loc.file.entry(loc.raw);
  if (sameShape(e.shape, r.at!.rawShape)) return;
  const spec = names.specs.get(r.name)!;
  throw new SafetensorsError(
    `${loc.file.path}: tensor "${loc.raw}" has shape ${shapeStr(e.shape)}, but config.json implies ${shapeStr(r.at!.rawShape)} (it holds ${r.name}: ${describe(spec)})`,
  );
}

const LAYER_PART = /^model\.layers\.(\d+)\.(block_sparse_moe\.|mlp\.|self_attn\.index)/;

/**
 * A stored MLP, MoE or index tensor the table does not list means the config describes the
 * layer differently (dense vs MoE, full vs MSA attention): an error naming both.
 */
function checkLayerKind(loc: Located, name: string, c: ModelConfig): void {
  const m = LAYER_PART.exec(name);
  // A stored router bias with use_routing_bias false is left unread, as before.
  if (!m || name.endsWith('.e_score_correction_bias')) return;
  const l = Number(m[1]);
  const hf = c.dialect === 'hf-native';
  const ffn = `${hf ? 'mlp_layer_types' : 'moe_layer_freq'}[${l}]: ${c.moeLayers[l] ? 'MoE' : 'dense'}`;
  const attn = `${hf ? 'layer_types' : 'sparse_attention_freq'}[${l}]: ${c.sparseLayers[l] ? 'MSA' : 'full attention'}`;
  throw new SafetensorsError(
    `${loc.file.path}: tensor "${loc.raw}" does not fit layer ${l} as config.json describes it (${m[2] === 'self_attn.index' ? attn : ffn})`,
  );
}

/** `[32, 64] (intermediate_size × hidden_size)`. */
export function describe(spec: WeightSpec): string {
  return `${shapeStr(spec.shape)} (${spec.dims.join(' × ')})`;
}
