import { writeFileSync } from 'node:fs';
import { runForward } from '../model/run-forward.js';
import { requireString, UsageError, type Command } from './command.js';
import { KV_CACHE_OPTIONS, kvCacheDtypeOption } from './kv-cache-options.js';
import { LOAD_OPTIONS, loadFormatOption, quantizationOption } from './load-options.js';
import { openModel, PARALLEL_OPTIONS, withModel } from './parallel-options.js';

export function parseIds(text: string): number[] {
  const ids = text.split(',').map((s) => Number(s.trim()));
  if (ids.length === 0 || ids.some((n) => !Number.isInteger(n) || n < 0)) {
    throw new UsageError(`--ids must be a comma-separated list of token ids (got "${text}")`);
  }
  return ids;
}

export const forwardCommand: Command = {
  name: 'forward',
  summary:
    'Run one full causal forward pass and write the logits of every position and the routed experts of every MoE layer as JSON.',
  usage: '--model DIR --ids 1,2,3 --out FILE [--tp N [--ep] [--sp]]',
  options: {
    model: {
      type: 'string',
      description: 'checkpoint directory (HuggingFace layout)',
      valueName: 'DIR',
    },
    ids: { type: 'string', description: 'comma-separated input token ids', valueName: 'IDS' },
    out: { type: 'string', description: 'output JSON file ("-" for stdout)', valueName: 'FILE' },
    backend: { type: 'string', default: 'cpu', description: 'cpu or cuda' },
    'fuse-shared-experts': {
      type: 'boolean',
      description: 'run the shared expert as routed expert id E (seed 002)',
    },
    ...LOAD_OPTIONS,
    ...KV_CACHE_OPTIONS,
    ...PARALLEL_OPTIONS,
  },
  async run(values) {
    const opened = await openModel(values, {
      modelDir: requireString(values, 'model'),
      backend: String(values['backend']),
      fuseSharedExperts: values['fuse-shared-experts'] === true,
      loadFormat: loadFormatOption(values),
      quantization: quantizationOption(values),
      kvCacheDtype: kvCacheDtypeOption(values),
    });
    if (!opened) return; // another host's ranks of a multi-host job
    const ids = parseIds(requireString(values, 'ids'));
    const out = requireString(values, 'out');
    await withModel(opened, async (model) => {
      if (ids.some((id) => id >= model.cfg.vocabSize))
        throw new UsageError(`--ids: token id outside the vocabulary of ${model.cfg.vocabSize}`);
      const result = await runForward(model, ids);
      const json = JSON.stringify({ logits: result.logits, routed_experts: result.routedExperts });
      if (out === '-') process.stdout.write(json + '\n');
      else writeFileSync(out, json);
    });
  },
};
