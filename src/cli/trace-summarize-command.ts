import {
  formatTraceSummary,
  readTraceDir,
  summarizeTrace,
} from '../parallel/allreduce-trace-summary.js';
import { numberOption, UsageError, type Command } from './command.js';

export const traceSummarizeCommand: Command = {
  name: 'trace summarize',
  summary:
    'Per layer of a fused-versus-native all-reduce trace folder (--allreduce-trace): max diffs over ranks and calls, the first layer over a threshold, and whether the diffs grow with depth.',
  usage: 'DIR [--threshold X] [--json]',
  options: {
    threshold: {
      type: 'string',
      default: '0',
      description: 'a layer exceeds it when its residual or norm max diff is larger',
      valueName: 'X',
    },
    json: { type: 'boolean', description: 'print the summary as one JSON object' },
  },
  async run(values, positionals) {
    const dir = positionals[0];
    if (!dir || positionals.length > 1) throw new UsageError('trace summarize takes one DIR');
    const threshold = numberOption(values, 'threshold', 0);
    const { files, records } = readTraceDir(dir);
    const summary = summarizeTrace(records, threshold, files);
    console.log(values['json'] ? JSON.stringify(summary) : formatTraceSummary(summary));
  },
};
