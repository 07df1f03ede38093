import { DEFAULT_GSM8K_TEST, DEFAULT_GSM8K_TRAIN, loadGsm8k } from '../eval/gsm8k-dataset.js';
import { formatGsm8kResult, runGsm8k, writeGsm8kOutput } from '../eval/gsm8k-eval.js';
import { choice } from './bench-serve-command.js';
import { intOption, type Command } from './command.js';
import { endpointOf, ENDPOINT_OPTIONS, modelOf, progressTick } from './eval-common.js';

/** `moeserve eval gsm8k`: lm-eval's gsm8k task (v3) over HTTP. */
export const evalGsm8kCommand: Command = {
  name: 'eval gsm8k',
  summary: 'k-shot GSM8K with lm-eval strict-match and flexible-extract scoring',
  options: {
    ...ENDPOINT_OPTIONS,
    mode: {
      type: 'string',
      default: 'completions',
      description: 'completions (one k-shot prompt) | chat (shots as user/assistant turns)',
      valueName: 'completions|chat',
    },
    dataset: {
      type: 'string',
      default: DEFAULT_GSM8K_TEST,
      description: 'test JSONL',
      valueName: 'PATH',
    },
    'fewshot-dataset': {
      type: 'string',
      default: DEFAULT_GSM8K_TRAIN,
      description: 'training JSONL; its first k items are the shots',
      valueName: 'PATH',
    },
    'num-fewshot': { type: 'string', default: '5', description: 'k', valueName: 'K' },
    'num-examples': {
      type: 'string',
      description: 'first N test items; default all',
      valueName: 'N',
    },
    'max-tokens': {
      type: 'string',
      default: '256',
      description: "lm-eval's max_gen_toks",
      valueName: 'N',
    },
    concurrency: {
      type: 'string',
      default: '32',
      description: 'requests in flight',
      valueName: 'N',
    },
    output: {
      type: 'string',
      description: 'per-sample JSONL (+ <output>.summary.json)',
      valueName: 'PATH',
    },
  },
  async run(values) {
    const endpoint = endpointOf(values);
    const k = intOption(values, 'num-fewshot', 5);
    const n =
      values['num-examples'] === undefined ? undefined : intOption(values, 'num-examples', 0);
    const { result, samples } = await runGsm8k({
      endpoint,
      model: await modelOf(values, endpoint),
      mode: choice(values, 'mode', ['completions', 'chat'] as const),
      shots: k > 0 ? loadGsm8k(String(values['fewshot-dataset']), k) : [],
      items: loadGsm8k(String(values['dataset']), n),
      maxTokens: intOption(values, 'max-tokens', 256),
      concurrency: intOption(values, 'concurrency', 32),
      onSample: (done, total) => progressTick('gsm8k', done, total),
    });
    if (typeof values['output'] === 'string') writeGsm8kOutput(values['output'], result, samples);
    console.log(formatGsm8kResult(result));
    return result.n_err > 0 ? 1 : 0;
  },
};
