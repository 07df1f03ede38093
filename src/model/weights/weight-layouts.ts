import type { ModelConfig } from '../../config/model-config.js';
import { allTensors, weightTable, type WeightSpec } from './weight-table.js';

/**
 * The names a checkpoint may give the table's tensors (minimax-m3.md §2.9):
 * - `a`: MiniMax's release (`block_sparse_moe.experts.N.w1/w2/w3`, `self_attn.index_q_proj`);
 * - `b`: transformers' per-expert names (`mlp.experts.N.gate_proj/up_proj/down_proj`,
 *   `mlp.gate`, `mlp.gate.e_score_correction_bias`, `self_attn.indexer.*`);
 * - `vl`: layout B under the VL prefix `model.language_model.` (lm_head at the top level);
 * - `hf-native`: what transformers 5.x `save_pretrained` writes for MiniMax-M3-VL: layout A
 *   names under `language_model.model.`, and `language_model.lm_head.weight`;
 * - `fused`: transformers' in-memory names (`model.state_dict()`): `mlp.gate_up_proj` [2I, D]
 *   for dense and shared MLPs, `mlp.experts.gate_up_proj` [E, 2I, D] and
 *   `mlp.experts.down_proj` [E, D, I], gate rows before up rows (not interleaved).
 * Reading also accepts per-expert fused `mlp.experts.N.gate_up_proj[.weight]` [2I, D] and any
 * of the prefixes on any of the names.
 */
export type WeightLayout = 'a' | 'b' | 'vl' | 'hf-native' | 'fused';

export const WEIGHT_LAYOUTS: readonly WeightLayout[] = ['a', 'b', 'vl', 'hf-native', 'fused'];

/** Where a table tensor sits in a stored tensor. */
export interface Placement {
  readonly raw: string;
  /** The stored tensor's full shape. */
  readonly rawShape: readonly number[];
  /** Index into the leading dim of a stacked [N, R, C] tensor. */
  readonly index?: number;
  /** First row of this tensor in the stored [R, C] matrix (or in matrix `index`). */
  readonly rowOffset: number;
}

type NameStyle = 'a' | 'b' | 'fused' | 'fused-per-expert';

const PREFIX: Readonly<Record<WeightLayout, { body: string; head: string }>> = {
  a: { body: 'model.', head: '' },
  b: { body: 'model.', head: '' },
  vl: { body: 'model.language_model.', head: '' },
  'hf-native': { body: 'language_model.model.', head: 'language_model.' },
  fused: { body: 'model.language_model.', head: '' },
};

const STYLE: Readonly<Record<WeightLayout, NameStyle>> = {
  a: 'a',
  b: 'b',
  vl: 'b',
  'hf-native': 'a',
  fused: 'fused',
};

const plain = (raw: string, s: WeightSpec): Placement => ({ raw, rawShape: s.shape, rowOffset: 0 });

/** The placement of table tensor `s` of a model with `numExperts` experts in a `layout` checkpoint. */
export function placement(s: WeightSpec, layout: WeightLayout, numExperts: number): Placement {
  const p = place(s, STYLE[layout], numExperts);
  const { body, head } = PREFIX[layout];
  const raw = p.raw.startsWith('model.') ? body + p.raw.slice(6) : head + p.raw;
  return { ...p, raw };
}

const LAYER = /^model\.layers\.(\d+)\.(.+)$/;
const EXPERT = /^block_sparse_moe\.experts\.(\d+)\.(w1|w2|w3)\.weight$/;
const EXPERT_B: Readonly<Record<string, string>> = {
  w1: 'gate_proj',
  w3: 'up_proj',
  w2: 'down_proj',
};
const INDEX = /^self_attn\.index_(q_proj|k_proj|q_norm|k_norm)\.(.+)$/;
const GATE_UP = /^(mlp|block_sparse_moe\.shared_experts)\.(gate_proj|up_proj)\.weight$/;

/** The placement of `s` with unprefixed names in one naming style. */
function place(s: WeightSpec, style: NameStyle, numExperts: number): Placement {
  const m = LAYER.exec(s.name);
  if (!m || style === 'a') return plain(s.name, s);
  const p = `model.layers.${m[1]}.`;
  const rest = m[2]!;
  const idx = INDEX.exec(rest);
  if (idx) return plain(`${p}self_attn.indexer.${idx[1]}.${idx[2]}`, s);
  if (rest === 'block_sparse_moe.e_score_correction_bias')
    return plain(`${p}mlp.gate.e_score_correction_bias`, s);
  const ex = EXPERT.exec(rest);
  if (ex) return placeExpert(s, p, Number(ex[1]), ex[2]!, style, numExperts);
  const gu = GATE_UP.exec(rest);
  if (gu && style !== 'b') {
    // [gate; up] as two contiguous halves of one [2I, D] tensor.
    const [I, D] = s.shape as [number, number];
    const owner = gu[1] === 'mlp' ? 'mlp' : 'mlp.shared_experts';
    return {
      raw: `${p}${owner}.gate_up_proj.weight`,
      rawShape: [2 * I, D],
      rowOffset: gu[2] === 'up_proj' ? I : 0,
    };
  }
  // Layout B calls the MoE block `mlp` too.
  const block = rest.startsWith('block_sparse_moe.') ? `mlp.${rest.slice(17)}` : rest;
  return plain(`${p}${block}`, s);
}

function placeExpert(
  s: WeightSpec,
  p: string,
  e: number,
  w: string,
  style: NameStyle,
  numExperts: number,
): Placement {
  const [R, C] = s.shape as [number, number];
  const up = w === 'w3';
  if (style === 'b' || (w === 'w2' && style === 'fused-per-expert'))
    return plain(`${p}mlp.experts.${e}.${EXPERT_B[w]}.weight`, s);
  if (style === 'fused-per-expert') {
    const raw = `${p}mlp.experts.${e}.gate_up_proj.weight`;
    return { raw, rawShape: [2 * R, C], rowOffset: up ? R : 0 };
  }
  // Stacked over experts (transformers' fused MoE parameters have no `.weight`).
  if (w === 'w2')
    return {
      raw: `${p}mlp.experts.down_proj`,
      rawShape: [numExperts, R, C],
      index: e,
      rowOffset: 0,
    };
  return {
    raw: `${p}mlp.experts.gate_up_proj`,
    rawShape: [numExperts, 2 * R, C],
    index: e,
    rowOffset: up ? R : 0,
  };
}

/** A stored tensor resolved: the canonical tensor it holds and where (several when fused). */
export interface Resolved {
  readonly name: string;
  /** Set for fused tensors; a one-to-one tensor is the whole stored tensor. */
  readonly at?: Placement;
}

const FUSED = /\.gate_up_proj(\.weight)?$|\.experts\.down_proj(\.weight)?$/;

/** Stored names → canonical tensors, for every readable layout, for one config. */
export class WeightNames {
  private readonly fused = new Map<string, Resolved[]>();
  readonly specs: ReadonlyMap<string, WeightSpec>;

  constructor(readonly config: ModelConfig) {
    const specs = allTensors(weightTable(config));
    this.specs = new Map(specs.map((s) => [s.name, s]));
    // Fused tensors are no renaming: their parts come from the table's shapes.
    for (const spec of specs) {
      for (const style of ['fused', 'fused-per-expert'] as const) {
        const at = place(spec, style, config.numExperts);
        if (at.raw === spec.name || !FUSED.test(at.raw)) continue;
        for (const alias of aliases(at.raw)) {
          const list = this.fused.get(alias) ?? [];
          if (!list.some((r) => r.name === spec.name)) list.push({ name: spec.name, at });
          this.fused.set(alias, list);
        }
      }
    }
  }

  /** What a stored tensor holds; null for tensors the text model does not use. */
  resolve(raw: string): readonly Resolved[] | null {
    if (isSkipped(raw, this.config)) return null;
    const name = stripPrefix(raw);
    const parts = this.fused.get(name);
    if (parts) return parts;
    return [{ name: canonicalName(name, this.config)! }];
  }
}

/** Spellings seen in the wild for one fused name. */
function aliases(name: string): string[] {
  if (name.endsWith('.weight') && name.includes('.experts.')) return [name, name.slice(0, -7)];
  if (name.includes('.experts.') && !name.endsWith('.weight')) return [name, `${name}.weight`];
  return [name];
}

/**
 * Maps a one-to-one stored name to its canonical name (layout A, no VL prefix), or null for
 * tensors the text model does not use. The inverse of `placement` for layouts a, b, vl and
 * hf-native (the tests check it over the whole table); also maps `_scale_inv` companions.
 */
export function canonicalName(raw: string, config: ModelConfig): string | null {
  if (isSkipped(raw, config)) return null;
  const name = stripPrefix(raw);
  const m = LAYER.exec(name);
  if (!m) return name;
  const layer = Number(m[1]);
  return `model.layers.${layer}.${layerSuffix(m[2]!, config.moeLayers[layer] === true)}`;
}

const INDEXER = /^self_attn\.indexer\.(q_proj|k_proj|q_norm|k_norm)\.(.+)$/;
const EXPERT_IN_B = /^mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.(.+)$/;
const EXPERT_W: Readonly<Record<string, string>> = {
  gate_proj: 'w1',
  up_proj: 'w3',
  down_proj: 'w2',
};

function layerSuffix(rest: string, isMoe: boolean): string {
  const idx = INDEXER.exec(rest);
  if (idx) return `self_attn.index_${idx[1]}.${idx[2]}`;
  // Layout B calls the MoE block `mlp` too; only MoE layers move to block_sparse_moe.
  if (!isMoe || !rest.startsWith('mlp.')) return rest;
  const ex = EXPERT_IN_B.exec(rest);
  if (ex) return `block_sparse_moe.experts.${ex[1]}.${EXPERT_W[ex[2]!]}.${ex[3]}`;
  if (rest === 'mlp.gate.e_score_correction_bias' || rest === 'mlp.e_score_correction_bias')
    return 'block_sparse_moe.e_score_correction_bias';
  return `block_sparse_moe.${rest.slice(4)}`;
}

/** A stored name without its VL prefix (`model.language_model.`, `language_model.[model.]`). */
export function stripPrefix(name: string): string {
  if (name.startsWith('model.language_model.')) return `model.${name.slice(21)}`;
  if (name.startsWith('language_model.')) return name.slice(15);
  return name;
}

/** Stored tensors the text model does not use (MTP, vision tower, projector). */
export function isSkipped(raw: string, config: ModelConfig): boolean {
  const name = stripPrefix(raw);
  if (SKIPPED.some((p) => name.startsWith(p))) return true;
  // DeepSeek-style checkpoints append MTP layers after the last decoder layer.
  const m = LAYER.exec(name);
  return m !== null && Number(m[1]) >= config.numLayers;
}

const SKIPPED = [
  'model.mtp.',
  'mtp.',
  'model.vision_tower.',
  'vision_tower.',
  'model.visual.',
  'visual.',
  'model.multi_modal_projector.',
  'multi_modal_projector.',
  'model.patch_merge_mlp.',
  'patch_merge_mlp.',
];
