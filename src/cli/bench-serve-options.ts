import type { OptionSpec } from './command.js';

/** Flags named as in SGLang's bench_serving (serving-anchors §2.1). */
export const BENCH_SERVE_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  'base-url': {
    type: 'string',
    default: 'http://127.0.0.1:8000',
    description: 'server URL',
    valueName: 'URL',
  },
  backend: {
    type: 'string',
    default: 'openai',
    description: 'openai = /v1/completions, openai-chat = /v1/chat/completions',
    valueName: 'openai|openai-chat',
  },
  model: { type: 'string', description: 'model name; default: the first id of GET /v1/models' },
  'dataset-name': {
    type: 'string',
    default: 'random',
    description:
      'random (random token ids, exact in tokens of --tokenizer) | random-words | sharegpt | generated-shared-prefix',
    valueName: 'NAME',
  },
  tokenizer: {
    type: 'string',
    description:
      "random: the model's tokenizer, a model directory or tokenizer.json; default the bundled model's when it is served, else --model when it is a local directory",
    valueName: 'DIR|FILE',
  },
  'dataset-path': { type: 'string', description: 'ShareGPT JSON/JSONL file', valueName: 'PATH' },
  'num-prompts': {
    type: 'string',
    default: '1000',
    description: 'requests per run',
    valueName: 'N',
  },
  'random-input-len': {
    type: 'string',
    default: '1024',
    description: 'random: prompt length in tokens (random-words: in words)',
    valueName: 'N',
  },
  'random-output-len': {
    type: 'string',
    default: '1024',
    description: 'random: max_tokens',
    valueName: 'N',
  },
  'random-range-ratio': {
    type: 'string',
    default: '0.0',
    description: 'random: length spread, see --range-ratio-convention',
    valueName: 'R',
  },
  'range-ratio-convention': {
    type: 'string',
    default: 'sglang',
    description:
      'sglang: lengths uniform in [max(1,floor(len*R)), len], so 0.0 = [1,len] and 1.0 = len; ' +
      'vllm: [floor(len*(1-R)), ceil(len*(1+R))], so 0.0 = len',
    valueName: 'sglang|vllm',
  },
  'sharegpt-output-len': {
    type: 'string',
    description: 'sharegpt: fixed max_tokens',
    valueName: 'N',
  },
  'gsp-num-groups': {
    type: 'string',
    default: '64',
    description: 'shared-prefix: groups',
    valueName: 'N',
  },
  'gsp-prompts-per-group': {
    type: 'string',
    default: '16',
    description: 'shared-prefix: prompts per group (num-prompts = groups x this)',
    valueName: 'N',
  },
  'gsp-system-prompt-len': {
    type: 'string',
    default: '2048',
    description: 'shared-prefix: shared prefix words',
    valueName: 'N',
  },
  'gsp-question-len': {
    type: 'string',
    default: '128',
    description: 'shared-prefix: question words',
    valueName: 'N',
  },
  'gsp-output-len': {
    type: 'string',
    default: '256',
    description: 'shared-prefix: max_tokens',
    valueName: 'N',
  },
  'max-concurrency': {
    type: 'string',
    description:
      'client-side in-flight limit; a comma list sweeps (e.g. 1,4,16,64); default unlimited',
    valueName: 'N[,N...]',
  },
  'request-rate': {
    type: 'string',
    default: 'inf',
    description: 'requests/s, or inf to send all at once',
    valueName: 'RPS',
  },
  burstiness: {
    type: 'string',
    default: '1.0',
    description: 'gamma shape of arrival gaps: 1 = Poisson, <1 burstier, inf = constant rate',
    valueName: 'B',
  },
  seed: {
    type: 'string',
    default: '1',
    description: 'seed for prompts, lengths and arrivals',
    valueName: 'N',
  },
  'warmup-requests': {
    type: 'string',
    default: '1',
    description: 'unmeasured requests before each run (first prompt, <=32 tokens)',
    valueName: 'N',
  },
  'num-runs': {
    type: 'string',
    default: '1',
    description: 'repeat each concurrency this many times',
    valueName: 'N',
  },
  'ignore-eos': {
    type: 'boolean',
    default: false,
    description: 'send ignore_eos so every request runs to max_tokens',
  },
  temperature: {
    type: 'string',
    default: '0',
    description: 'sampling temperature',
    valueName: 'T',
  },
  'extra-request-body': {
    type: 'string',
    description: 'JSON merged into every request body',
    valueName: 'JSON',
  },
  'api-key': { type: 'string', description: 'sent as Authorization: Bearer', valueName: 'KEY' },
  'ttft-convention': {
    type: 'string',
    default: 'sglang',
    description:
      'sglang: first token = first chunk with text (content or reasoning), E2E ends at [DONE]; ' +
      'vllm: first chunk with non-empty choices (role-only counts), E2E ends at the last such chunk',
    valueName: 'sglang|vllm',
  },
  'request-timeout': {
    type: 'string',
    default: '3600',
    description: 'seconds without a byte before a request fails',
    valueName: 'S',
  },
  'flush-cache': {
    type: 'boolean',
    default: false,
    description: 'POST /flush_cache (SGLang) or /reset_prefix_cache (vLLM) before each run',
  },
  'output-file': {
    type: 'string',
    description:
      'JSONL file, one line appended per run; default {backend}_{MMDD}_{num_prompts}_{in}_{out}.jsonl',
    valueName: 'PATH',
  },
  'output-details': {
    type: 'boolean',
    default: false,
    description: 'add per-request input/output lengths, TTFTs, ITLs',
  },
  tag: {
    type: 'string',
    description: 'free-form label stored in each JSON line',
    valueName: 'TEXT',
  },
};
