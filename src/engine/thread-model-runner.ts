import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ForwardBatch } from '../backend/forward-batch.js';
import type { LoadFormat } from '../model/load-model.js';
import type { KvCacheDtype } from '../model/minimax-m3/kv-cache.js';
import type { Quantization } from '../model/minimax-m3/quantize-weights.js';
import type { LoadProgress } from '../model/weights/load-progress.js';
import type { LoadStats } from '../model/weights/weight-source.js';
import type { MemoryReport, ModelRunner, StepOutput } from './model-runner.js';

/** What the model thread loads: the checkpoint and the runner's options (plain data). */
export interface ModelThreadSpec {
  readonly dir: string;
  readonly cpuThreads: number;
  readonly loadFormat?: LoadFormat;
  readonly quantization: Quantization | null;
  readonly kvCacheDtype?: KvCacheDtype;
  /** What the CPU backend's KV caches hold (`--kv-cache-dtype bf16`: bf16; else float32). */
  readonly cpuKvCacheDtype?: 'f32' | 'bf16';
  readonly numPages?: number;
  readonly maxModelLen?: number;
}

/** The runner's fixed facts (the in-thread M3ModelRunner's), sent once the model is loaded. */
export type ModelThreadInfo = Pick<
  ModelRunner,
  'vocabSize' | 'numPages' | 'pageSize' | 'maxModelLen' | 'eosTokenIds'
> & { readonly memory: MemoryReport };

/** Requests to the model thread. */
export type ToModelThread =
  | { readonly kind: 'forward'; readonly id: number; readonly batch: ForwardBatch }
  | { readonly kind: 'close' };

/** An error thrown on the model thread, as data (its class name kept for the message). */
export interface ThreadError {
  readonly name: string;
  readonly message: string;
}

/** The error again on this thread, under its class name (`SafetensorsError: …`). */
function revive(e: ThreadError): Error {
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/** Replies from the model thread. */
export type FromModelThread =
  | { readonly kind: 'progress-start'; readonly totalBytes: number; readonly tensors: number }
  | { readonly kind: 'progress-advance'; readonly bytes: number }
  | { readonly kind: 'progress-done'; readonly stats: LoadStats }
  | { readonly kind: 'ready'; readonly info: ModelThreadInfo }
  | { readonly kind: 'load-failed'; readonly error: ThreadError }
  | { readonly kind: 'output'; readonly id: number; readonly out: StepOutput }
  | { readonly kind: 'failed'; readonly id: number; readonly error: ThreadError };

interface Pending {
  resolve(out: StepOutput): void;
  reject(e: Error): void;
}

/**
 * A ModelRunner whose model (the CPU backend and its worker pool, the weights, the KV cache)
 * lives on a worker thread (model-thread.ts). `forward` posts the batch and waits without
 * blocking this thread, so the engine launches step N+1 and then serves step N's HTTP and SSE
 * work while the forward runs (`overlapsHost`); vLLM V1 keeps its engine core in another
 * process for the same reason. Forwards run one at a time, in the order they were asked for.
 */
export class ThreadModelRunner implements ModelRunner {
  readonly overlapsHost = true;
  readonly vocabSize: number;
  readonly numPages: number;
  readonly pageSize: number;
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  readonly memory: MemoryReport;
  /**
   * Rejects if the thread dies (an uncaught error, an exit) other than through `close`: the
   * server then ends, as it does when a --tp rank dies, rather than fail every request.
   */
  readonly failed: Promise<never>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private broken: Error | null = null;
  private closing = false;
  private rejectFailed: (e: Error) => void = () => {};

  private constructor(
    private readonly worker: Worker,
    info: ModelThreadInfo,
  ) {
    this.vocabSize = info.vocabSize;
    this.numPages = info.numPages;
    this.pageSize = info.pageSize;
    this.maxModelLen = info.maxModelLen;
    this.eosTokenIds = info.eosTokenIds;
    this.memory = info.memory;
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {}); // handled by whoever watches it; never unhandled
    worker.on('message', (m: FromModelThread) => this.onMessage(m));
    worker.on('error', (e) => this.fail(e));
    worker.on('exit', (code) => this.fail(new Error(`the model thread exited (code ${code})`)));
  }

  /** Starts the thread and resolves once the model is loaded (a load error rejects, named). */
  static start(spec: ModelThreadSpec, progress?: LoadProgress): Promise<ThreadModelRunner> {
    const worker = spawnModelThread(spec);
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromModelThread): void => {
        if (m.kind === 'progress-start') progress?.start(m.totalBytes, m.tensors);
        else if (m.kind === 'progress-advance') progress?.advance(m.bytes);
        else if (m.kind === 'progress-done') progress?.done(m.stats);
        else if (m.kind === 'ready' || m.kind === 'load-failed') {
          worker.off('message', onMessage);
          worker.off('error', onError);
          if (m.kind === 'ready') resolve(new ThreadModelRunner(worker, m.info));
          else void worker.terminate().then(() => reject(revive(m.error)));
        }
      };
      const onError = (e: Error): void => reject(e);
      worker.on('message', onMessage);
      worker.once('error', onError);
    });
  }

  forward(batch: ForwardBatch): Promise<StepOutput> {
    if (this.broken) return Promise.reject(this.broken);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ kind: 'forward', id, batch } satisfies ToModelThread);
    });
  }

  /** Ends the model thread after the forwards already asked for. */
  async close(): Promise<void> {
    if (this.broken) return;
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage({ kind: 'close' } satisfies ToModelThread);
    await closed;
  }

  private onMessage(m: FromModelThread): void {
    if (m.kind !== 'output' && m.kind !== 'failed') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.kind === 'output') p.resolve(m.out);
    else p.reject(revive(m.error));
  }

  /** The thread died: every forward waiting and every later one fails with the reason. */
  private fail(e: Error): void {
    this.broken ??= e;
    for (const p of this.pending.values()) p.reject(this.broken);
    this.pending.clear();
    if (!this.closing) this.rejectFailed(this.broken);
  }
}

/**
 * The worker runs model-thread.js next to this module. Run from TypeScript sources (tests, `tsx
 * src/cli/main.ts`) it is model-thread.ts: the thread first registers tsx's loader (a worker's
 * execArgv does not carry `--import`), which only the sources need.
 */
function spawnModelThread(spec: ModelThreadSpec): Worker {
  const ext = extname(fileURLToPath(import.meta.url));
  const entry = new URL(`./model-thread${ext}`, import.meta.url).href;
  if (ext !== '.ts') return new Worker(new URL(entry), { workerData: spec });
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href.replace(
    /\.cjs$/,
    '.mjs',
  ); // the package's `import` entry, beside its `require` one
  const source =
    `import(${JSON.stringify(tsx)}).then((t) => { t.register(); ` +
    `return import(${JSON.stringify(entry)}); });`;
  return new Worker(source, { eval: true, workerData: spec });
}
