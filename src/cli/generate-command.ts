import { argmax, generateTokens } from '../model/generate.js';
import { intOption, numberOption, requireString, type Command } from './command.js';
import { parseIds } from './forward-command.js';
import { openModel, PARALLEL_OPTIONS, withModel } from './parallel-options.js';

/** A seeded sampler (mulberry32) over softmax(logits / temperature); temperature 0 = greedy. */
function makePicker(temperature: number, seed: number): (logits: Float32Array) => number {
  if (temperature <= 0) return argmax;
  let state = seed >>> 0;
  const rand = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (logits) => {
    const max = logits.reduce((m, v) => Math.max(m, v), -Infinity);
    const p = Array.from(logits, (v) => Math.exp((v - max) / temperature));
    let u = rand() * p.reduce((s, v) => s + v, 0);
    for (let i = 0; i < p.length; i++) if ((u -= p[i]!) <= 0) return i;
    return p.length - 1;
  };
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
    seed: { type: 'string', default: '0', description: 'sampling seed', valueName: 'S' },
    'ignore-eos': { type: 'boolean', description: 'do not stop at the EOS token' },
    backend: { type: 'string', default: 'cpu', description: 'cpu or cuda' },
    json: { type: 'boolean', description: 'print {"ids": [...], "time_ms": ...} as JSON' },
    ...PARALLEL_OPTIONS,
  },
  async run(values) {
    const prompt = parseIds(requireString(values, 'ids'));
    const opened = await openModel(values, {
      modelDir: requireString(values, 'model'),
      backend: String(values['backend']),
      fuseSharedExperts: false,
    });
    if (!opened) return; // another host's ranks of a multi-host job
    await withModel(opened, async (model) => {
      const start = performance.now();
      const out: number[] = [];
      for await (const tok of generateTokens(model, prompt, {
        maxTokens: intOption(values, 'max-tokens', 16),
        eosTokenIds: values['ignore-eos'] ? [] : model.cfg.eosTokenIds,
        pick: makePicker(numberOption(values, 'temperature', 0), intOption(values, 'seed', 0)),
      })) {
        out.push(tok.tokenId);
      }
      const ms = performance.now() - start;
      if (values['json']) console.log(JSON.stringify({ ids: out, time_ms: ms }));
      else console.log(out.join(','));
    });
  },
};
