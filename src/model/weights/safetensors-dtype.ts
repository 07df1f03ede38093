import { f16ToF32, F8E4M3_TABLE } from '../../tensor/dtype.js';

/** Element types as a safetensors header spells them. */
export type StDType =
  | 'BOOL'
  | 'U8'
  | 'I8'
  | 'U16'
  | 'I16'
  | 'F16'
  | 'BF16'
  | 'U32'
  | 'I32'
  | 'F32'
  | 'U64'
  | 'I64'
  | 'F64'
  | 'F8_E4M3'
  | 'F8_E5M2';

export const ST_DTYPE_BYTES: Readonly<Record<StDType, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  U16: 2,
  I16: 2,
  F16: 2,
  BF16: 2,
  U32: 4,
  I32: 4,
  F32: 4,
  U64: 8,
  I64: 8,
  F64: 8,
  F8_E4M3: 1,
  F8_E5M2: 1,
};

/** The dtypes `decodeToF32` converts; the others can be listed but not read. */
export const DECODABLE: ReadonlySet<StDType> = new Set<StDType>([
  'F32',
  'BF16',
  'F16',
  'F8_E4M3',
  'U8',
  'I32',
  'I64',
]);

export function isStDType(s: unknown): s is StDType {
  return typeof s === 'string' && Object.hasOwn(ST_DTYPE_BYTES, s);
}

let f16Table: Float32Array | undefined;

/** All 65536 half values, built on first use: a lookup beats decoding bit fields per element. */
function f16Lookup(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let b = 0; b < 65536; b++) f16Table[b] = f16ToF32(b);
  }
  return f16Table;
}

/**
 * Converts little-endian raw elements to float32. `bytes` must start at a multiple of its
 * element size within its buffer (fresh Uint8Arrays do). F32 input is returned as a view.
 */
export function decodeToF32(dtype: StDType, bytes: Uint8Array): Float32Array {
  const n = bytes.byteLength / ST_DTYPE_BYTES[dtype];
  switch (dtype) {
    case 'F32':
      return new Float32Array(bytes.buffer, bytes.byteOffset, n);
    case 'BF16': {
      const src = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
      const out = new Float32Array(n);
      const bits = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) bits[i] = src[i]! << 16;
      return out;
    }
    case 'F16':
      return lookup(new Uint16Array(bytes.buffer, bytes.byteOffset, n), f16Lookup());
    case 'F8_E4M3':
      return lookup(bytes, F8E4M3_TABLE);
    case 'U8':
      return Float32Array.from(bytes);
    case 'I32':
      return Float32Array.from(new Int32Array(bytes.buffer, bytes.byteOffset, n));
    case 'I64': {
      const src = new BigInt64Array(bytes.buffer, bytes.byteOffset, n);
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = Number(src[i]!);
      return out;
    }
    default:
      throw new Error(`dtype ${dtype} cannot be converted to float32`);
  }
}

function lookup(codes: Uint8Array | Uint16Array, table: Float32Array): Float32Array {
  const out = new Float32Array(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = table[codes[i]!]!;
  return out;
}
