import type { MsaOptions } from '../../backend.js';
import type { BatchLayout, ForwardBatch } from '../../forward-batch.js';
import { pagedAttention, type PagedAttentionArgs } from '../ops/attention.js';
import { matmulF32, panelRows } from '../ops/matmul.js';
import { msaSelectBlocks, pickBlocks } from '../ops/msa-select.js';
import { ATTENTION_WASM_BASE64, MATMUL_WASM_BASE64 } from './kernels-wasm.js';
import { HeapScratch, StepTables } from './step-tables.js';
import { wasm } from './wasm-api.js';
import { WasmHeap } from './wasm-heap.js';

type WasmMatmul = (
  o: number,
  x: number,
  w: number,
  M: number,
  N: number,
  K: number,
  P: number,
) => void;

// prettier-ignore
type WasmAttention = (out: number, q: number, k: number, v: number, meta: number, blocks: number,
  T: number, t0: number, t1: number, H: number, Hkv: number, Dh: number, S: number, topk: number,
  scale: number, blist: number, scores: number) => void;

// prettier-ignore
type WasmMsaScores = (q: number, k: number, pt: number, pos: number, S: number, Hi: number,
  Di: number, nb: number, out: number) => void;

const compiled = new Map<string, object>();

function instantiate(b64: string, memory: object): Record<string, unknown> {
  let mod = compiled.get(b64);
  if (!mod) {
    mod = new wasm.Module(Buffer.from(b64, 'base64'));
    compiled.set(b64, mod);
  }
  return new wasm.Instance(mod, { env: { memory } }).exports;
}

/**
 * The CPU backend's memory and hot kernels. matmul, attention and MSA block scoring run the
 * WASM SIMD kernels (matmul.wat, attention.wat) when all operands live in the heap and the
 * widths suit 4-lane vectors, else the float64 JS kernels (the reference they are tested
 * against).
 */
export class CpuKernels {
  readonly heap = new WasmHeap();
  private readonly wasmMatmul: WasmMatmul;
  private readonly wasmAttention: WasmAttention;
  private readonly wasmMsaScores: WasmMsaScores;
  private readonly tables = new StepTables(this.heap);
  private readonly scratch = new HeapScratch(this.heap);

  constructor() {
    this.wasmMatmul = instantiate(MATMUL_WASM_BASE64, this.heap.memory)['matmul'] as WasmMatmul;
    const attn = instantiate(ATTENTION_WASM_BASE64, this.heap.memory);
    this.wasmAttention = attn['attention'] as WasmAttention;
    this.wasmMsaScores = attn['msa_scores'] as WasmMsaScores;
  }

  /** out[M, N] = x[M, K] · w[N, K]^T. */
  matmul(
    out: Float32Array,
    x: Float32Array,
    w: Float32Array,
    M: number,
    N: number,
    K: number,
  ): void {
    const h = this.heap;
    if (K % 4 === 0 && h.owns(out) && h.owns(x) && h.owns(w)) {
      this.wasmMatmul(out.byteOffset, x.byteOffset, w.byteOffset, M, N, K, panelRows(K));
    } else {
      matmulF32(out, x, w, M, N, K);
    }
  }

  /** Paged causal GQA attention (dense, or over `a.blocks`); see Backend.attention. */
  attention(a: PagedAttentionArgs, batch: ForwardBatch, layout: BatchLayout): void {
    const h = this.heap;
    const inHeap = [a.out, a.q, a.k, a.v].every((x) => h.owns(x));
    if (a.headDim % 16 !== 0 || !inHeap || (a.blocks !== null && !h.owns(a.blocks))) {
      pagedAttention(a, batch, layout);
      return;
    }
    this.tables.fill(batch, layout);
    const S = batch.pageSize;
    const maxPos = this.tables.maxPos;
    const maxBlocks = a.blocks ? a.topk : Math.floor(maxPos / S) + 1;
    const maxKeys = a.blocks ? a.topk * S : maxPos + 1;
    const blistLen = (maxBlocks + 3) & ~3;
    const s = this.scratch.f32(blistLen + maxKeys + 8);
    this.wasmAttention(
      a.out.byteOffset,
      a.q.byteOffset,
      a.k.byteOffset,
      a.v.byteOffset,
      this.tables.metaPtr,
      a.blocks ? a.blocks.byteOffset : 0,
      layout.numTokens,
      0,
      layout.numTokens,
      a.numHeads,
      a.numKvHeads,
      a.headDim,
      S,
      a.topk,
      a.scale,
      s.byteOffset,
      s.byteOffset + blistLen * 4,
    );
  }

  /** MSA block selection; see Backend.msaSelect. */
  msaSelect(
    out: Int32Array,
    idxQ: Float32Array,
    idxK: Float32Array,
    batch: ForwardBatch,
    layout: BatchLayout,
    o: MsaOptions,
  ): void {
    const h = this.heap;
    if (o.indexDim % 4 !== 0 || !h.owns(idxQ) || !h.owns(idxK)) {
      msaSelectBlocks(out, idxQ, idxK, batch, layout, o);
      return;
    }
    this.tables.fill(batch, layout);
    const S = batch.pageSize;
    const T = layout.numTokens;
    const { numIndexHeads: Hi, indexDim: Di, topk } = o;
    const maxBlocks = Math.floor(this.tables.maxPos / S) + 1;
    const scores = this.scratch.f32(Hi * maxBlocks + 2 * maxBlocks);
    const taken = new Uint8Array(scores.buffer, scores.byteOffset + Hi * maxBlocks * 4, maxBlocks);
    out.fill(-1);
    for (let t = 0; t < T; t++) {
      const pos = layout.positions[t]!;
      const nb = Math.floor(pos / S) + 1;
      if (nb > topk) {
        // prettier-ignore
        this.wasmMsaScores(idxQ.byteOffset + t * Hi * Di * 4, idxK.byteOffset,
          this.tables.pageTablePtr(t), pos, S, Hi, Di, nb, scores.byteOffset);
      }
      for (let hd = 0; hd < Hi; hd++)
        pickBlocks(out, (hd * T + t) * topk, scores, hd * nb, nb, o, taken);
    }
  }
}
