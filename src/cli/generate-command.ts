import { checkSamplingParams, SequenceSampler } from '../engine/sampler.js';
import { generateTokens } from '../model/generate.js';
import { OPENAI_SAMPLING_DEFAULTS } from '../server/server-options.js';
import { intOption, numberOption, requireString, UsageError, type Command } from './command.js';
import { parseIds } from './forward-command.js';
import { KV_CACHE_OPTIONS, kvCacheDtypeOption } from './kv-cache-options.js';
import { LOAD_OPTIONS, loadFormatOption, quantizationOption } from './load-options.js';
import { openModel, PARALLEL_OPTIONS, withModel } from './parallel-options.js';

/** The engine's sampler (seeded, vLLM order); temperature 0 is greedy. */
function makePicker(
  temperature: number,
  topP: number,
  topK: number,
  seed: number,
  prompt: readonly number[],
): (logits: Float32Array) => number {
  const params = { ...OPENAI_SAMPLING_DEFAULTS, temperature, topP, topK, seed };
  const problem = checkSamplingParams(params);
  if (problem) throw new UsageError(problem);
  const sampler = new SequenceSampler(params, prompt);
  return (logits) => sampler.sample(logits, null).tokenId;
}

export const generateCommand: Command = {
  name: 'generate',
  summary:
    'Decode token by token through the KV cache, greedily or with seeded sampling; prints the generated ids.',
  usage: '--model DIR --ids 1,2,3 --max-tokens N [--tp N [--ep] [--sp]]',
  options: {
    model: { type: 'string', description: 'checkpoint directory', valueName: 'DIR' },
    ids: { type: 'string', description: 'comma-separated prompt token ids', valueName: 'IDS' },
    'max-tokens': {
      type: 'string',
      default: '16',
      description: 'tokens to generate',
      valueName: 'N',
    },
    temperature: { type: 'string', default: '0', description: '0 = greedy', valueName: 'T' },
    'top-p': { type: 'string', default: '1', description: 'nucleus sampling', valueName: 'P' },
    'top-k': { type: 'string', default: '0', description: '0 = off', valueName: 'K' },
    seed: { type: 'string', default: '0', description: 'sampling seed', valueName: 'S' },
    'ignore-eos': { type: 'boolean', description: 'do not stop at the EOS token' },
    backend: { type: 'string', default: 'cpu', description: 'cpu or cuda' },
    json: { type: 'boolean', description: 'print {"ids": [...], "time_ms": ...} as JSON' },
    ...LOAD_OPTIONS,
    ...KV_CACHE_OPTIONS,
    ...PARALLEL_OPTIONS,
  },
  async run(values) {
    const prompt = parseIds(requireString(values, 'ids'));
    const opened = await openModel(values, {
      modelDir: requireString(values, 'model'),
      backend: String(values['backend']),
      fuseSharedExperts: false,
      loadFormat: loadFormatOption(values),
      quantization: quantizationOption(values),
      kvCacheDtype: kvCacheDtypeOption(values),
    });
    if (!opened) return; // another host's ranks of a multi-host job
    await withModel(opened, async (model) => {
      const start = performance.now();
      const out: number[] = [];
      for await (const tok of generateTokens(model, prompt, {
        maxTokens: intOption(values, 'max-tokens', 16),
        eosTokenIds: values['ignore-eos'] ? [] : model.cfg.eosTokenIds,
        pick: makePicker(
          numberOption(values, 'temperature', 0),
          numberOption(values, 'top-p', 1),
          intOption(values, 'top-k', 0),
          intOption(values, 'seed', 0),
          prompt,
        ),
      })) {
        out.push(tok.tokenId);
      }
      const ms = performance.now() - start;
      if (values['json']) console.log(JSON.stringify({ ids: out, time_ms: ms }));
      else console.log(out.join(','));
    });
  },
};
