import type { KvCacheDtype } from '../model/minimax-m3/kv-cache.js';
import { cpuKvCacheDtypeOption, KV_CACHE_OPTIONS, kvCacheDtypeOption } from './kv-cache-options.js';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { availableParallelism, homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBackend } from '../backend/create-backend.js';
import type { Engine, SamplingParams } from '../engine/engine-types.js';
import { DEFAULT_ENGINE_CONFIG } from '../engine/engine-config.js';
import { LlmEngine } from '../engine/llm-engine.js';
import { M3ModelRunner } from '../engine/m3-model-runner.js';
import { ThreadModelRunner } from '../engine/thread-model-runner.js';
import { GrammarService } from '../engine/grammar/grammar-service.js';
import type { ModelRunner } from '../engine/model-runner.js';
import { loadModel, type LoadFormat } from '../model/load-model.js';
import type { Quantization } from '../model/minimax-m3/quantize-weights.js';
import type { LoadProgress } from '../model/weights/load-progress.js';
import { stepRunnerFor } from '../engine/step-runner-for.js';
import { writeRandomCheckpoint } from '../model/weights/random-checkpoint.js';
import { PRESETS } from '../model/weights/random-presets.js';
import { grammarVocab } from '../server/grammar-vocab.js';
import { createServer } from '../server/http-server.js';
import type { ChatRenderer, ServerTokenizer } from '../server/server-deps.js';
import { DEFAULT_SERVER_OPTIONS, OPENAI_SAMPLING_DEFAULTS } from '../server/server-options.js';
import {
  adaptTokenizer,
  byteTokenizer,
  chatRenderer,
  outputParsers,
  PARSER_NAMES,
} from '../server/text-adapters.js';
import { readEnv } from '../config/env.js';
import { loadTokenizer } from '../tokenizer/load-tokenizer.js';
import { readTokenizerConfig } from '../tokenizer/tokenizer-config.js';
import { intOption, UsageError, type Command } from './command.js';
import {
  LOAD_OPTIONS,
  loadFormatOption,
  quantizationOption,
  stderrLoadProgress,
} from './load-options.js';
import { cpuThreadsFrom, openDistributedRunner, PARALLEL_OPTIONS } from './parallel-options.js';
import { requestShare, SERVE_LIMITS_OPTIONS, serveLimits } from './serve-limits-options.js';

/** The model `npm start` serves: bundled with the package (see the tiny-model issue). */
export const BUNDLED_MODEL_DIR = fileURLToPath(
  new URL('../../models/moeserve-tiny-m3', import.meta.url),
);
/** Where a random tiny checkpoint is written while no bundled model exists. */
const RANDOM_MODEL_DIR = join(homedir(), '.cache', 'moeserve', 'random-tiny-m3');
/** The served name of the default model, random stand-in or not, so the README's curl works. */
const DEFAULT_MODEL_NAME = 'moeserve-tiny-m3';

export interface EngineFactoryOptions {
  readonly backend: string;
  /** Threads of the CPU backend (`--cpu-threads`). */
  readonly cpuThreads?: number;
  readonly maxModelLen?: number;
  readonly numPages?: number;
  readonly maxNumSeqs?: number;
  readonly maxNumBatchedTokens?: number;
  /** Share of batch slots and KV pages one request may hold while others wait. */
  readonly maxRequestShare?: number;
  /** Default `auto`; `dummy` builds random weights from config.json alone. */
  readonly loadFormat?: LoadFormat;
  /** `--quantization` (null: weights as stored). */
  readonly quantization?: Quantization | null;
  /** `--kv-cache-dtype` resolved (default bf16). */
  readonly kvCacheDtype?: KvCacheDtype;
  /** What the CPU backend's KV caches hold (`--kv-cache-dtype bf16`: bf16; else float32). */
  readonly cpuKvCacheDtype?: 'f32' | 'bf16';
  /** Load progress and summary (the serve command shows them on stderr). */
  readonly progress?: LoadProgress;
  /** No tokenizer.json is expected: bytes are token ids, without the missing-file warning. */
  readonly skipTokenizerInit?: boolean;
  /** CUDA: never capture graphs (vLLM's --enforce-eager). */
  readonly enforceEager?: boolean;
  /** CUDA: largest decode batch replayed from a graph (vLLM's --cuda-graph-max-bs). */
  readonly cudaGraphMaxBs?: number;
  /** A runner built elsewhere (rank 0 of a --tp group); otherwise one is loaded on `backend`. */
  readonly runner?: ModelRunner;
}

/** What the HTTP server needs from a model directory. */
export interface ModelServing {
  readonly engine: Engine;
  readonly resetPrefixCache: () => void;
  readonly tokenizer: ServerTokenizer;
  readonly chatTemplate: ChatRenderer;
  /** From generation_config.json, as vLLM applies it by default. */
  readonly samplingDefaults: SamplingParams;
  /** Structured outputs over the checkpoint's vocabulary; null without a tokenizer.json. */
  readonly grammar: GrammarService | null;
}

/** Sampling defaults: OpenAI's, overridden by the checkpoint's generation_config.json. */
function readSamplingDefaults(dir: string): SamplingParams {
  const path = join(dir, 'generation_config.json');
  if (!existsSync(path)) return OPENAI_SAMPLING_DEFAULTS;
  const g = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const num = (key: string, fallback: number) =>
    typeof g[key] === 'number' ? (g[key] as number) : fallback;
  const d = OPENAI_SAMPLING_DEFAULTS;
  return {
    ...d,
    temperature: num('temperature', d.temperature),
    topP: num('top_p', d.topP),
    topK: num('top_k', d.topK),
    minP: num('min_p', d.minP),
    repetitionPenalty: num('repetition_penalty', d.repetitionPenalty),
  };
}

/**
 * Builds the engine (backend, weights, KV cache, scheduler) and the text side (tokenizer,
 * chat template) for one checkpoint directory. A checkpoint without tokenizer.json gets a
 * byte tokenizer (right for the random tiny preset: vocabulary 256, EOS 255).
 */
export async function createEngineFromModelDir(
  dir: string,
  o: EngineFactoryOptions,
): Promise<ModelServing> {
  const runner =
    o.runner ??
    new M3ModelRunner(
      await loadModel(dir, {
        backend: await createBackend(o.backend, {
          cpuThreads: o.cpuThreads,
          ...(o.cpuKvCacheDtype && { cpuKvCacheDtype: o.cpuKvCacheDtype }),
        }),
        ...(o.loadFormat && { loadFormat: o.loadFormat }),
        quantization: o.quantization ?? null,
        ...(o.kvCacheDtype && { kvCacheDtype: o.kvCacheDtype }),
        ...(o.progress && { progress: o.progress }),
      }),
      {
        ...(o.numPages !== undefined && { numPages: o.numPages }),
        ...(o.maxModelLen !== undefined && { maxModelLen: o.maxModelLen }),
      },
    );
  const stepRunner = await stepRunnerFor(runner, {
    ...(o.enforceEager !== undefined && { enforceEager: o.enforceEager }),
    ...(o.cudaGraphMaxBs !== undefined && { cudaGraphMaxBs: o.cudaGraphMaxBs }),
    maxNumSeqs: o.maxNumSeqs ?? DEFAULT_ENGINE_CONFIG.maxNumSeqs,
  });
  const engine = new LlmEngine(stepRunner, {
    ...(o.maxNumSeqs !== undefined && { maxNumSeqs: o.maxNumSeqs }),
    ...(o.maxNumBatchedTokens !== undefined && { maxNumBatchedTokens: o.maxNumBatchedTokens }),
    ...(o.maxRequestShare !== undefined && { maxRequestShare: o.maxRequestShare }),
  });
  const cfg = readTokenizerConfig(dir);
  const bpe = existsSync(join(dir, 'tokenizer.json')) ? loadTokenizer(dir) : null;
  if (!bpe && !o.skipTokenizerInit)
    console.error(
      `moeserve: warning: ${join(dir, 'tokenizer.json')} is missing; text is read as bytes ` +
        '(token id = byte). Pass --skip-tokenizer-init to say this is intended.',
    );
  const tokenizer = bpe
    ? adaptTokenizer(bpe)
    : byteTokenizer(runner.vocabSize, runner.eosTokenIds[0] ?? -1);
  const grammar = bpe
    ? await GrammarService.create(grammarVocab(bpe, runner.vocabSize, runner.eosTokenIds))
    : null;
  const tokens = {
    ...(cfg.bosToken !== undefined && { bosToken: cfg.bosToken }),
    ...(cfg.eosToken !== undefined && { eosToken: cfg.eosToken }),
  };
  return {
    engine,
    resetPrefixCache: () => engine.resetPrefixCache(),
    tokenizer,
    chatTemplate: chatRenderer(cfg.chatTemplate, tokens),
    samplingDefaults: readSamplingDefaults(dir),
    grammar,
  };
}

/**
 * The CPU model on its own thread overlaps each forward with the previous step's HTTP work, but
 * only pays where that work has a core of its own: on 2 cores with 2 compute threads the three
 * threads contend and served c=32 lost 11 of 12 rounds, about 8% (docs/benchmarks/cpu.md, session 13).
 * MOESERVE_MODEL_THREAD=1 / 0 overrides.
 */
function wantsModelThread(values: Record<string, unknown>): boolean {
  return readEnv().modelThread ?? availableParallelism() > cpuThreadsFrom(values, 1);
}

/** `serve --backend cpu`: the model on its own thread, loaded with serve's options. */
function cpuModelThread(dir: string, values: Record<string, unknown>): Promise<ThreadModelRunner> {
  const numPages = optionalInt(values, 'num-pages');
  const maxModelLen = optionalInt(values, 'max-model-len');
  const loadFormat = loadFormatOption(values);
  const kvCacheDtype = kvCacheDtypeOption(values);
  return ThreadModelRunner.start(
    {
      dir,
      cpuThreads: cpuThreadsFrom(values, 1),
      cpuKvCacheDtype: cpuKvCacheDtypeOption(values),
      quantization: quantizationOption(values),
      ...(loadFormat && { loadFormat }),
      ...(kvCacheDtype && { kvCacheDtype }),
      ...(numPages !== undefined && { numPages }),
      ...(maxModelLen !== undefined && { maxModelLen }),
    },
    stderrLoadProgress(),
  );
}

/** A part of the server that dies (a --tp rank, the model thread) ends it: none half alive. */
function exitOnFailure(
  failed: Promise<never>,
  app: { close(): Promise<unknown> },
  cleanup?: () => Promise<unknown>,
): void {
  failed.catch(async (e: unknown) => {
    console.error(`moeserve: ${(e as Error).message}`);
    await app.close().catch(() => {});
    await cleanup?.();
    process.exit(1);
  });
}

/** --model, else the bundled model, else a random tiny checkpoint (written once, cached). */
function resolveModelDir(arg: unknown): { dir: string; name: string } {
  if (typeof arg === 'string' && arg !== '') {
    if (!existsSync(join(arg, 'config.json')))
      throw new UsageError(`--model: ${arg} holds no config.json`);
    return { dir: resolve(arg), name: basename(resolve(arg)) };
  }
  if (existsSync(join(BUNDLED_MODEL_DIR, 'config.json')))
    return { dir: BUNDLED_MODEL_DIR, name: DEFAULT_MODEL_NAME };
  if (!existsSync(join(RANDOM_MODEL_DIR, 'config.json'))) {
    console.error(
      `moeserve: no bundled model; writing a random tiny checkpoint to ${RANDOM_MODEL_DIR}`,
    );
    writeRandomCheckpoint({ config: PRESETS['tiny']!(), outDir: RANDOM_MODEL_DIR, seed: 0 });
  }
  return { dir: RANDOM_MODEL_DIR, name: DEFAULT_MODEL_NAME };
}

function parserOption(values: Record<string, unknown>, name: string): string | null {
  const v = String(values[name]);
  if (v === 'none') return null;
  if (!(PARSER_NAMES as readonly string[]).includes(v))
    throw new UsageError(`--${name} must be one of ${[...PARSER_NAMES, 'none'].join(', ')}`);
  return v;
}

function optionalInt(values: Record<string, unknown>, name: string): number | undefined {
  if (values[name] === undefined) return undefined;
  const n = intOption(values, name, 0);
  if (n < 1) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

/**
 * Stops on SIGTERM/SIGINT: new requests get 503, in-flight ones may finish for the drain
 * time, then the engine stops. A second signal exits at once; so does a shutdown that
 * overruns the drain time by ENGINE_STOP_GRACE_MS (an engine step that never returns).
 */
const ENGINE_STOP_GRACE_MS = 10_000;

function untilShutdown(drainMs: number, close: () => Promise<void>): Promise<number> {
  return new Promise((done) => {
    let stopping = false;
    const stop = (sig: string) => {
      if (stopping) {
        console.error(`moeserve: ${sig} again, exiting now`);
        process.exit(1);
      }
      stopping = true;
      console.error(`moeserve: ${sig}, finishing requests in flight (at most ${drainMs / 1000} s)`);
      setTimeout(() => {
        console.error('moeserve: shutdown overran its time, exiting now');
        process.exit(1);
      }, drainMs + ENGINE_STOP_GRACE_MS).unref();
      close().then(
        () => done(0),
        (e: unknown) => {
          console.error(`moeserve: shutdown failed: ${(e as Error).message}`);
          done(1);
        },
      );
    };
    // `on`, not `once`: the second signal must reach the handler, not Node's default kill.
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve a model over an OpenAI-compatible HTTP API',
  usage: '[--model DIR] [--host H] [--port N]',
  options: {
    model: {
      type: 'string',
      description: 'checkpoint directory (default: the bundled tiny model)',
      valueName: 'DIR',
    },
    host: { type: 'string', default: '127.0.0.1', description: 'address to listen on' },
    port: { type: 'string', default: '8000', description: 'port to listen on', valueName: 'N' },
    'served-model-name': {
      type: 'string',
      description:
        'the `model` clients send (default: the directory name; moeserve-tiny-m3 for the default model)',
      valueName: 'NAME',
    },
    'max-concurrent-requests': {
      type: 'string',
      default: String(DEFAULT_SERVER_OPTIONS.maxConcurrentRequests),
      description: 'generation requests in flight; more get 429',
      valueName: 'N',
    },
    'max-body-bytes': {
      type: 'string',
      default: String(DEFAULT_SERVER_OPTIONS.bodyLimitBytes),
      description: 'largest request body; more get 413',
      valueName: 'N',
    },
    'max-model-len': {
      type: 'string',
      description: 'context limit, prompt + completion (default: the model config)',
      valueName: 'N',
    },
    'reasoning-parser': {
      type: 'string',
      default: 'minimax-m3',
      description: 'split <mm:think> reasoning into reasoning_content (minimax-m3 | none)',
      valueName: 'NAME',
    },
    'tool-call-parser': {
      type: 'string',
      default: 'minimax-m3',
      description: 'parse tool calls into tool_calls (minimax-m3 | none)',
      valueName: 'NAME',
    },
    'return-routed-experts': {
      type: 'boolean',
      description: 'allow the return_routed_experts request field',
    },
    backend: { type: 'string', default: 'cpu', description: 'cpu | cuda' },
    'max-num-seqs': {
      type: 'string',
      default: String(DEFAULT_ENGINE_CONFIG.maxNumSeqs),
      description: 'sequences per batch',
      valueName: 'N',
    },
    'max-num-batched-tokens': {
      type: 'string',
      default: String(DEFAULT_ENGINE_CONFIG.maxNumBatchedTokens),
      description: 'token budget of one engine step (prefill chunk size)',
      valueName: 'N',
    },
    'num-pages': {
      type: 'string',
      description:
        'KV-cache pages to allocate (default: from memory; CUDA: 90% of free memory after the weights, less 4 GiB)',
      valueName: 'N',
    },
    'enforce-eager': {
      type: 'boolean',
      description: 'cuda: run every step eagerly, no CUDA graphs (vLLM flag)',
    },
    'cuda-graph-max-bs': {
      type: 'string',
      default: '512',
      description:
        'cuda: largest decode batch replayed from a CUDA graph; sizes 1, 2, 4, 8, 16, 24, ... up to min(this, --max-num-seqs)',
      valueName: 'N',
    },
    'log-requests': { type: 'boolean', description: 'log every request (JSON lines)' },
    ...LOAD_OPTIONS,
    ...KV_CACHE_OPTIONS,
    'skip-tokenizer-init': {
      type: 'boolean',
      description: 'serve without tokenizer.json (bytes as token ids), with no warning',
    },
    ...SERVE_LIMITS_OPTIONS,
    ...PARALLEL_OPTIONS,
  },
  async run(values) {
    const limits = serveLimits(values, readEnv().apiKey);
    const { dir, name } = resolveModelDir(values['model']);
    const parsers = outputParsers({
      reasoning: parserOption(values, 'reasoning-parser'),
      toolCall: parserOption(values, 'tool-call-parser'),
    });
    const backend = String(values['backend']);
    const numPages = optionalInt(values, 'num-pages');
    const maxModelLen = optionalInt(values, 'max-model-len');
    const loadFormat = loadFormatOption(values);
    const quantization = quantizationOption(values);
    const kvCacheDtype = kvCacheDtypeOption(values);
    // --tp > 1: this process is rank 0 and drives the worker ranks; on another host
    // (--node-rank > 0) it only supervises that host's ranks until the group ends.
    const dist = await openDistributedRunner(
      values,
      { modelDir: dir, backend, fuseSharedExperts: false, loadFormat, quantization, kvCacheDtype },
      {
        ...(numPages !== undefined && { numPages }),
        ...(maxModelLen !== undefined && { maxModelLen }),
      },
    );
    if (dist === 'other-host') return 0;
    const thread =
      !dist && backend === 'cpu' && wantsModelThread(values)
        ? await cpuModelThread(dir, values)
        : null;
    const serving = await createEngineFromModelDir(dir, {
      backend,
      cpuThreads: cpuThreadsFrom(values, 1),
      cpuKvCacheDtype: cpuKvCacheDtypeOption(values),
      maxModelLen,
      numPages,
      maxNumSeqs: optionalInt(values, 'max-num-seqs'),
      maxNumBatchedTokens: optionalInt(values, 'max-num-batched-tokens'),
      maxRequestShare: requestShare(values),
      loadFormat,
      quantization,
      kvCacheDtype,
      progress: stderrLoadProgress(),
      skipTokenizerInit: values['skip-tokenizer-init'] === true,
      enforceEager: values['enforce-eager'] === true,
      cudaGraphMaxBs: optionalInt(values, 'cuda-graph-max-bs'),
      ...(dist && { runner: dist.runner }),
      ...(thread && { runner: thread }),
    });
    const modelName = (values['served-model-name'] as string | undefined) ?? name;
    const app = createServer({
      ...serving,
      modelName,
      parsers,
      logger: values['log-requests'] === true,
      options: {
        ...limits,
        maxConcurrentRequests: intOption(
          values,
          'max-concurrent-requests',
          DEFAULT_SERVER_OPTIONS.maxConcurrentRequests,
        ),
        bodyLimitBytes: intOption(values, 'max-body-bytes', DEFAULT_SERVER_OPTIONS.bodyLimitBytes),
        returnRoutedExperts: values['return-routed-experts'] === true,
        samplingDefaults: serving.samplingDefaults,
      },
    });
    const host = String(values['host']);
    const port = intOption(values, 'port', 8000);
    await app.listen({ host, port });
    const bound = (app.server.address() as AddressInfo | null)?.port ?? port; // --port 0 picks one
    const where = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
    console.log(
      `moeserve: serving ${modelName} at ${where}/v1 (${dir}, ${backend}${thread ? ', model thread' : ''})`,
    );
    // A rank or the model thread that dies ends the server, even between requests.
    if (dist) exitOnFailure(dist.group.failed, app, () => dist.group.abort());
    if (thread) exitOnFailure(thread.failed, app);
    const drainMs = limits.shutdownTimeoutMs ?? DEFAULT_SERVER_OPTIONS.shutdownTimeoutMs;
    return untilShutdown(drainMs, async () => {
      await app.drainAndClose(drainMs);
      await serving.engine.shutdown();
      await serving.grammar?.close();
    });
  },
};
