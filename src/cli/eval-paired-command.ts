import { formatPaired, pairEvals, readEvalItems } from '../eval/paired-eval.js';
import { UsageError, type Command } from './command.js';

/** `moeserve eval paired A.jsonl B.jsonl`: did a change alter accuracy, item by item? */
export const evalPairedCommand: Command = {
  name: 'eval paired',
  summary:
    'paired comparison of two eval runs over the same items: discordant counts and an exact McNemar test',
  usage: 'A.jsonl B.jsonl [--field correct|flexibleCorrect|strictCorrect]',
  options: {
    field: {
      type: 'string',
      default: 'correct',
      description:
        'per-item boolean to compare (stop-rate: correct; gsm8k: flexibleCorrect or strictCorrect)',
      valueName: 'NAME',
    },
    labels: {
      type: 'string',
      default: 'A,B',
      description: 'names of the two runs',
      valueName: 'A,B',
    },
    json: { type: 'boolean', description: 'print the report as JSON' },
  },
  async run(values, positionals) {
    if (positionals.length !== 2)
      throw new UsageError('eval paired takes exactly two per-item JSONL files');
    const field = String(values['field']);
    const r = pairEvals(
      readEvalItems(positionals[0]!, field),
      readEvalItems(positionals[1]!, field),
    );
    const [a = 'A', b = 'B'] = String(values['labels']).split(',');
    console.log(values['json'] ? JSON.stringify(r) : formatPaired(r, [a, b]));
  },
};
