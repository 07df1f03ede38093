/**
 * The few WebAssembly JS-API members the CPU kernels use. Node has them at runtime, but the
 * project's TypeScript libs (ES2023 + @types/node, no DOM) do not declare them.
 */
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
  grow(pages: number): number;
}

interface WasmApi {
  Memory: new (d: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  validate(bytes: Uint8Array): boolean;
}

export const wasm: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
