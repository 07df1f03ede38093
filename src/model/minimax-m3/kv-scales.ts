import type { Checkpoint } from '../weights/checkpoint.js';
import type { KvScales } from './kv-cache.js';

/**
 * Where checkpoints keep a layer's per-tensor KV-cache scales, in vLLM's order: the HF
 * layout (`self_attn.k_scale`), vLLM's attention module (`self_attn.attn.k_scale`) and
 * compressed-tensors / ModelOpt (`self_attn.k_proj.output_scale`).
 */
function candidates(layer: number, kv: 'k' | 'v'): string[] {
  const p = `model.layers.${layer}.self_attn.`;
  return [`${p}${kv}_scale`, `${p}attn.${kv}_scale`, `${p}${kv}_proj.output_scale`];
}

/**
 * The FP8 KV cache's per-layer scales from the checkpoint (`--kv-cache-dtype fp8`): each is
 * one positive finite float (what the stored codes mean is code × scale); a layer without
 * one gets 1.0, as in vLLM. A per-head or otherwise non-scalar scale is refused.
 */
export function readKvScales(ckpt: Checkpoint, numLayers: number): KvScales[] {
  return Array.from({ length: numLayers }, (_, l) => ({
    k: readScale(ckpt, candidates(l, 'k')),
    v: readScale(ckpt, candidates(l, 'v')),
  }));
}

function readScale(ckpt: Checkpoint, names: string[]): number {
  const name = names.find((n) => ckpt.has(n));
  if (name === undefined) return 1;
  const info = ckpt.info(name);
  const t = ckpt.read(name);
  const where = `${info.file}: tensor "${info.rawName}"`;
  if (t.data.length !== 1)
    throw new Error(
      `${where}: a per-tensor KV-cache scale is one value, got shape [${info.shape.join(', ')}]`,
    );
  const s = t.data[0]!;
  if (!(s > 0 && Number.isFinite(s)))
    throw new Error(`${where}: KV-cache scale must be positive and finite, got ${s}`);
  return s;
}
