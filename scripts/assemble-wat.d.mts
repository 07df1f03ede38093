/** WAT text → wasm bytes, with SIMD and threads (shared memory) enabled. */
export function assembleWat(text: string): Promise<Uint8Array>;
/** The bf16-weight variant of matmul.wat's text (export "matmul_bf16"). */
export function bf16Variant(text: string): string;
/** The bf16-weight variant of matmul-packed.wat's text (export "matmul_packed_bf16"). */
export function packedBf16Variant(text: string): string;
