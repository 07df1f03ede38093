import {
  KV_CACHE_DTYPE_FLAGS,
  resolveKvCacheDtype,
  type KvCacheDtype,
  type KvCacheDtypeFlag,
} from '../model/minimax-m3/kv-cache.js';
import { UsageError, type OptionSpec } from './command.js';

/** How the KV cache stores keys and values (vLLM's flag), for serve, forward and generate. */
export const KV_CACHE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  'kv-cache-dtype': {
    type: 'string',
    default: 'auto',
    description:
      'auto/bf16: the model dtype (the CPU keeps float32 caches for auto, its reference; bf16 rounds them to bf16, and attention reads half the bytes); fp8 (= fp8_e4m3): E4M3 keys and values with per-layer k_scale/v_scale from the checkpoint (else 1.0), saturating at ±448, and E4M3 MSA index keys: half the KV memory. The CPU computes on the same rounded values',
    valueName: KV_CACHE_DTYPE_FLAGS.join('|'),
  },
};

export function kvCacheDtypeOption(values: Record<string, unknown>): KvCacheDtype {
  const v = String(values['kv-cache-dtype'] ?? 'auto');
  if (!(KV_CACHE_DTYPE_FLAGS as readonly string[]).includes(v))
    throw new UsageError(
      `--kv-cache-dtype must be one of ${KV_CACHE_DTYPE_FLAGS.join(', ')} (got "${v}")`,
    );
  return resolveKvCacheDtype(v as KvCacheDtypeFlag);
}

/**
 * What the CPU backend's caches hold: bf16 for an explicit `--kv-cache-dtype bf16`, else
 * float32 (auto: the reference's dtype; fp8 caches hold their E4M3 values in float32).
 */
export function cpuKvCacheDtypeOption(values: Record<string, unknown>): 'f32' | 'bf16' {
  return values['kv-cache-dtype'] === 'bf16' ? 'bf16' : 'f32';
}
