import { intOption, requireString, type Command } from './command.js';
import { generateData } from '../datagen/gen-data.js';

/** `moeserve gen-data`: the tiny model's training and held-out data (docs/tiny-model.md). */
export const genDataCommand: Command = {
  name: 'gen-data',
  summary: 'Generate the tiny model training and held-out data (MiniMax-M3 chat format)',
  usage: '--out DIR [--seed S] [--num-train N] [--num-heldout M]',
  options: {
    out: { type: 'string', description: 'output folder', valueName: 'DIR' },
    seed: { type: 'string', description: 'random seed', default: '1234' },
    'num-train': { type: 'string', description: 'training conversations', default: '200000' },
    'num-heldout': {
      type: 'string',
      description: 'held-out arithmetic and tool conversations (each)',
      default: '500',
    },
  },
  async run(values) {
    const t0 = Date.now();
    const manifest = await generateData({
      outDir: requireString(values, 'out'),
      seed: intOption(values, 'seed', 1234),
      numTrain: intOption(values, 'num-train', 200000),
      numHeldout: intOption(values, 'num-heldout', 500),
    });
    console.log(JSON.stringify(manifest));
    console.log(`gen-data: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  },
};

export default genDataCommand;
