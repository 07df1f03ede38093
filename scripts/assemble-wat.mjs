import wabtInit from 'wabt';

/** WAT text → wasm bytes, with SIMD and threads (shared memory) enabled. */
export async function assembleWat(text) {
  const wabt = await wabtInit();
  const mod = wabt.parseWat('kernel.wat', text, { simd: true, threads: true });
  try {
    return new Uint8Array(mod.toBinary({}).buffer);
  } finally {
    mod.destroy();
  }
}
