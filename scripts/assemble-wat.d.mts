/** WAT text → wasm bytes, with SIMD, threads, bulk memory and relaxed SIMD enabled. */
export function assembleWat(text: string): Promise<Uint8Array>;
/** The bf16-weight variant of matmul.wat's text (export "matmul_bf16"). */
export function bf16Variant(text: string): string;
/** The bf16-weight variant of matmul-packed.wat's text (export "matmul_packed_bf16"). */
export function packedBf16Variant(text: string): string;
/** The fused multiply-add (f32x4.relaxed_madd) variant of a kernel's text (its accumulations). */
export function fmaVariant(text: string, allFused?: boolean): string;
/** The bf16 K/V (and index key) variant of attention.wat's text ("attention_kv16", "msa_*_kv16"). */
export function kvBf16Variant(text: string): string;
