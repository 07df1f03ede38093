import { relative } from 'node:path';
import { ContextBudget } from '../eval/context-budget.js';
import { BUNDLED_MODEL_NAME, defaultGsm8kDataset } from '../eval/eval-defaults.js';
import { loadGsm8k } from '../eval/gsm8k-dataset.js';
import { runStopRate } from '../eval/stop-rate.js';
import { formatStopRateSummary, formatStopRateTotal } from '../eval/stop-rate-summary.js';
import { intOption, numberOption, type Command } from './command.js';
import { endpointOf, ENDPOINT_OPTIONS, modelOf, progressTick } from './eval-common.js';

/** `moeserve eval stop-rate`: seed 000's finish_reason gate, resumable. */
export const evalStopRateCommand: Command = {
  name: 'eval stop-rate',
  summary: 'finish_reason / runaway check over a GSM8K-style JSONL (resumable)',
  options: {
    ...ENDPOINT_OPTIONS,
    dataset: {
      type: 'string',
      description: `JSONL of {question, answer "... #### N"}; default data/gsm8k/test.jsonl, or data/tiny-m3/heldout-gsm8k.jsonl when the model is ${BUNDLED_MODEL_NAME}`,
      valueName: 'PATH',
    },
    output: {
      type: 'string',
      default: 'stop-rate.jsonl',
      description:
        'per-request records; the summary goes to <output>.summary.json; rerun to resume',
      valueName: 'PATH',
    },
    'max-tokens': {
      type: 'string',
      default: '8192',
      description:
        "generous, so only true runaways hit it; clamped per request to what the model's context leaves",
      valueName: 'N',
    },
    concurrency: {
      type: 'string',
      default: '32',
      description: 'requests in flight',
      valueName: 'N',
    },
    'num-examples': { type: 'string', description: 'first N items; default all', valueName: 'N' },
    temperature: {
      type: 'string',
      default: '0',
      description: 'sampling temperature',
      valueName: 'T',
    },
    'min-stop-rate-pct': {
      type: 'string',
      description: 'exit 1 when stop_rate_pct is below this',
      valueName: 'PCT',
    },
  },
  async run(values) {
    const endpoint = endpointOf(values);
    const numExamples =
      values['num-examples'] === undefined ? undefined : intOption(values, 'num-examples', 0);
    const model = await modelOf(values, endpoint);
    const dataset = datasetOf(values, model);
    const items = loadGsm8k(dataset, numExamples);
    const output = String(values['output']);
    const summary = await runStopRate({
      endpoint,
      model,
      items,
      output,
      maxTokens: new ContextBudget(endpoint, intOption(values, 'max-tokens', 8192)),
      concurrency: intOption(values, 'concurrency', 32),
      temperature: numberOption(values, 'temperature', 0),
      onRecord: (_r, done, todo) => progressTick('stop-rate', done, todo),
    });
    console.log(formatStopRateSummary(summary, `${output}.summary.json`));
    console.log(formatStopRateTotal(summary));
    const gate = values['min-stop-rate-pct'];
    const belowGate =
      gate !== undefined && summary.stop_rate_pct < numberOption(values, 'min-stop-rate-pct', 0);
    return summary.n_err > 0 || belowGate ? 1 : 0;
  },
};

/** `--dataset`, else the default for the served model (said in one line). */
export function datasetOf(values: Record<string, unknown>, model: string): string {
  if (typeof values['dataset'] === 'string') return values['dataset'];
  const path = defaultGsm8kDataset(model);
  const rel = relative(process.cwd(), path);
  console.log(`dataset: ${rel.startsWith('..') ? path : rel} (default for ${model})`);
  return path;
}
