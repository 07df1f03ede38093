import { ContextBudget } from '../eval/context-budget.js';
import { BUNDLED_MODEL_NAME } from '../eval/eval-defaults.js';
import { DEFAULT_GSM8K_TRAIN, loadGsm8k } from '../eval/gsm8k-dataset.js';
import {
  formatGsm8kResult,
  formatGsm8kTotal,
  runGsm8k,
  writeGsm8kOutput,
} from '../eval/gsm8k-eval.js';
import { choice } from './bench-serve-command.js';
import { intOption, type Command } from './command.js';
import { endpointOf, ENDPOINT_OPTIONS, modelOf, progressTick } from './eval-common.js';
import { datasetOf } from './eval-stop-rate-command.js';

type Values = Record<string, unknown>;

/**
 * `--mode` and `--num-fewshot` when given; else lm-eval's (completions, 5 shots), or chat with
 * no shots for the bundled model, which was trained on chat turns with bare questions.
 */
function modeAndShots(values: Values, model: string): { mode: 'completions' | 'chat'; k: number } {
  const tiny = model === BUNDLED_MODEL_NAME;
  const v = { ...values };
  v['mode'] ??= tiny ? 'chat' : 'completions';
  v['num-fewshot'] ??= tiny ? '0' : '5';
  if (tiny && (values['mode'] === undefined || values['num-fewshot'] === undefined))
    console.log(
      `mode: ${String(v['mode'])}, ${String(v['num-fewshot'])}-shot (default for ${model})`,
    );
  return {
    mode: choice(v, 'mode', ['completions', 'chat'] as const),
    k: intOption(v, 'num-fewshot', 5),
  };
}

/** `moeserve eval gsm8k`: lm-eval's gsm8k task (v3) over HTTP. */
export const evalGsm8kCommand: Command = {
  name: 'eval gsm8k',
  summary: 'k-shot GSM8K with lm-eval strict-match and flexible-extract scoring',
  options: {
    ...ENDPOINT_OPTIONS,
    mode: {
      type: 'string',
      description: `completions (one k-shot prompt) | chat (shots as user/assistant turns); default completions, chat for ${BUNDLED_MODEL_NAME}`,
      valueName: 'completions|chat',
    },
    dataset: {
      type: 'string',
      description: `test JSONL; default data/gsm8k/test.jsonl, or data/tiny-m3/heldout-gsm8k.jsonl for ${BUNDLED_MODEL_NAME}`,
      valueName: 'PATH',
    },
    'fewshot-dataset': {
      type: 'string',
      default: DEFAULT_GSM8K_TRAIN,
      description: 'training JSONL; its first k items are the shots',
      valueName: 'PATH',
    },
    'num-fewshot': {
      type: 'string',
      description: `k; default 5, 0 for ${BUNDLED_MODEL_NAME}`,
      valueName: 'K',
    },
    'num-examples': {
      type: 'string',
      description: 'first N test items; default all',
      valueName: 'N',
    },
    'max-tokens': {
      type: 'string',
      default: '256',
      description: "lm-eval's max_gen_toks; clamped per request to what the model's context leaves",
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
    const model = await modelOf(values, endpoint);
    const { mode, k } = modeAndShots(values, model);
    const n =
      values['num-examples'] === undefined ? undefined : intOption(values, 'num-examples', 0);
    const { result, samples } = await runGsm8k({
      endpoint,
      model,
      mode,
      shots: k > 0 ? loadGsm8k(String(values['fewshot-dataset']), k) : [],
      items: loadGsm8k(datasetOf(values, model), n),
      maxTokens: new ContextBudget(endpoint, intOption(values, 'max-tokens', 256)),
      concurrency: intOption(values, 'concurrency', 32),
      onSample: (done, total) => progressTick('gsm8k', done, total),
    });
    if (typeof values['output'] === 'string') writeGsm8kOutput(values['output'], result, samples);
    console.log(formatGsm8kResult(result));
    console.log(formatGsm8kTotal(result));
    return result.n_err > 0 ? 1 : 0;
  },
};
