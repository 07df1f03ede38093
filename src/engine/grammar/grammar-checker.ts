import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** A grammar source as the compiler takes it. */
export type GrammarSource =
  | { readonly kind: 'json_schema'; readonly schema: string }
  | { readonly kind: 'ebnf'; readonly grammar: string };

/** The grammar is invalid; `message` is xgrammar's reason. */
export class GrammarError extends Error {}

// Runs in a worker: converts the grammar with a private xgrammar instance and reports
// xgrammar's [FATAL] line. xgrammar aborts its WASM module on invalid input, so invalid
// grammars must never reach the serving instance; an aborted worker is replaced.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Module = require('node:module');
const fs = require('node:fs');
const path = require('node:path');
const lines = [];
console.error = (...a) => lines.push(a.join(' '));
console.warn = console.error;
const filename = workerData.filename;
const m = new Module(filename);
m.filename = filename;
m.paths = Module._nodeModulePaths(path.dirname(filename));
m._compile(fs.readFileSync(filename, 'utf8'), filename);
const xg = m.exports;
parentPort.on('message', async ({ id, source }) => {
  lines.length = 0;
  try {
    if (source.kind === 'json_schema') await xg.Testings._jsonSchemaToEBNF(source.schema, false, -1);
    else (await xg.Grammar.fromEBNF(source.grammar)).dispose();
    parentPort.postMessage({ id, ok: true });
  } catch (e) {
    const fatal = lines.find((l) => l.includes('[FATAL]'));
    const reason = fatal ? fatal.replace(/^\\[FATAL\\] \\S+?:\\d+: /, '') : String(e);
    parentPort.postMessage({ id, ok: false, error: reason });
  }
});
`;

interface Reply {
  id: number;
  ok: boolean;
  error?: string;
}

/**
 * Checks grammars in a worker thread before the serving xgrammar instance compiles them. One
 * worker, started on first use, checks one grammar at a time; it is replaced after a failure
 * (its WASM module is aborted) or a timeout.
 */
export class GrammarChecker {
  private worker: Worker | null = null;
  private nextId = 0;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly timeoutMs = 10_000) {}

  /** Resolves when `source` is valid; rejects with a GrammarError naming the problem. */
  check(source: GrammarSource): Promise<void> {
    const run = this.queue.then(() => this.run(source));
    this.queue = run.catch(() => undefined);
    return run;
  }

  close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    return w ? w.terminate().then(() => undefined) : Promise.resolve();
  }

  private run(source: GrammarSource): Promise<void> {
    const worker = (this.worker ??= this.spawn());
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        void this.replace(worker);
        reject(new GrammarError(`the grammar took over ${this.timeoutMs} ms to compile`));
      }, this.timeoutMs);
      const onMessage = (r: Reply) => {
        if (r.id !== id) return;
        cleanup();
        if (r.ok) return resolve();
        void this.replace(worker);
        reject(new GrammarError(r.error ?? 'invalid grammar'));
      };
      const onError = (e: Error) => {
        cleanup();
        void this.replace(worker);
        reject(new Error(`grammar checker failed: ${e.message}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.postMessage({ id, source });
    });
  }

  private spawn(): Worker {
    const filename = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { filename } });
    w.unref();
    return w;
  }

  private async replace(w: Worker): Promise<void> {
    if (this.worker === w) this.worker = null;
    await w.terminate();
  }
}
