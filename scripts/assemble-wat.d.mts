/** WAT text → wasm bytes, with SIMD and threads (shared memory) enabled. */
export function assembleWat(text: string): Promise<Uint8Array>;
