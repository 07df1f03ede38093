import type { Command } from './command.js';

/**
 * The registry of subcommands. Each entry is loaded lazily so that a command's
 * dependencies (CUDA, HTTP server, ...) are only imported when it runs.
 */
export const COMMANDS: Readonly<Record<string, { summary: string; load: () => Promise<Command> }>> =
  {
    forward: {
      summary: 'one full forward pass: logits and routed experts as JSON',
      load: async () => (await import('./forward-command.js')).forwardCommand,
    },
    generate: {
      summary: 'decode token by token through the KV cache',
      load: async () => (await import('./generate-command.js')).generateCommand,
    },
    serve: {
      summary: 'serve a model over an OpenAI-compatible HTTP API',
      load: async () => (await import('./serve-command.js')).serveCommand,
    },
    'bench serve': {
      summary: 'load-test an OpenAI-compatible server (SGLang bench_serving flags and metrics)',
      load: async () => (await import('./bench-serve-command.js')).benchServeCommand,
    },
    'eval stop-rate': {
      summary: 'finish_reason / runaway check over a GSM8K-style JSONL (resumable)',
      load: async () => (await import('./eval-stop-rate-command.js')).evalStopRateCommand,
    },
    'eval gsm8k': {
      summary: 'k-shot GSM8K with lm-eval strict-match and flexible-extract scoring',
      load: async () => (await import('./eval-gsm8k-command.js')).evalGsm8kCommand,
    },
    'eval paired': {
      summary: 'paired McNemar comparison of two eval runs (stop-rate or gsm8k records)',
      load: async () => (await import('./eval-paired-command.js')).evalPairedCommand,
    },
    'eval tool-loop': {
      summary: 'multi-turn tool-calling loop with scripted tool results',
      load: async () => (await import('./eval-tool-loop-command.js')).evalToolLoopCommand,
    },
    compare: {
      summary: 'A/B table, deltas, verdicts and SVG chart from bench serve JSONL files',
      load: async () => (await import('./compare-command.js')).compareCommand,
    },
    'trace summarize': {
      summary: 'per-layer max diffs of a fused-versus-native all-reduce trace folder',
      load: async () => (await import('./trace-summarize-command.js')).traceSummarizeCommand,
    },
    'init-random': {
      summary: 'write a random-weight checkpoint for a preset (minimax-m3, tiny) or a config',
      load: async () => (await import('./init-random-command.js')).initRandomCommand,
    },
    'gen-data': {
      summary: 'generate the tiny model training and held-out data (MiniMax-M3 chat format)',
      load: async () => (await import('./gen-data-command.js')).genDataCommand,
    },
    worker: {
      summary: '(internal) one rank of a --tp job, started by the launcher',
      load: async () => (await import('./worker-command.js')).workerCommand,
    },
  };

/** Commands left out of the usage text (started by moeserve itself). */
export const HIDDEN_COMMANDS: ReadonlySet<string> = new Set(['worker']);
