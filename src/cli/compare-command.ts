import { writeFileSync } from 'node:fs';
import { loadArm } from '../bench/compare-data.js';
import { compareSvg } from '../bench/compare-svg.js';
import {
  compareMarkdown,
  compareSummary,
  DEFAULT_COMPARE_METRICS,
} from '../bench/compare-table.js';
import { UsageError, type Command } from './command.js';

/** `moeserve compare`: the seeds' A/B table from bench serve result files. */
export const compareCommand: Command = {
  name: 'compare',
  summary: 'A/B table, deltas, verdicts and SVG chart from bench serve JSONL files',
  usage: 'LABEL=RUNS.jsonl[,MORE.jsonl] LABEL=RUNS.jsonl [...]',
  options: {
    baseline: {
      type: 'string',
      description: 'label of the arm deltas are taken against; default the first',
      valueName: 'LABEL',
    },
    metrics: {
      type: 'string',
      default: DEFAULT_COMPARE_METRICS.join(','),
      description: 'comma list of JSON fields; *_ms fields count as lower-is-better',
      valueName: 'LIST',
    },
    output: {
      type: 'string',
      description: 'write the Markdown here instead of stdout',
      valueName: 'PATH',
    },
    svg: {
      type: 'string',
      description: 'write a chart of two metrics against concurrency',
      valueName: 'PATH',
    },
    'svg-metrics': {
      type: 'string',
      default: 'output_throughput,median_tpot_ms',
      description: 'the two fields the chart plots',
      valueName: 'A,B',
    },
  },
  async run(values, positionals) {
    if (positionals.length < 2) throw new UsageError('compare needs at least two arms');
    const arms = positionals.map(loadArm);
    const baseLabel = values['baseline'];
    const baseIdx =
      typeof baseLabel === 'string' ? arms.findIndex((a) => a.label === baseLabel) : 0;
    if (baseIdx < 0) throw new UsageError(`no arm labelled "${String(baseLabel)}"`);
    const metrics = String(values['metrics'])
      .split(',')
      .filter((m) => m !== '');
    const md = compareMarkdown(arms, baseIdx, metrics);
    if (typeof values['output'] === 'string') writeFileSync(values['output'], md);
    else process.stdout.write(md);
    const wrote: string[] = [];
    if (typeof values['output'] === 'string') wrote.push(values['output']);
    if (typeof values['svg'] === 'string') {
      const [a, b] = String(values['svg-metrics']).split(',');
      if (!a || !b) throw new UsageError('--svg-metrics needs two comma-separated fields');
      writeFileSync(values['svg'], compareSvg(arms, [a, b]));
      wrote.push(values['svg']);
    }
    // On stderr, so `compare … > ab.md` keeps the Markdown clean.
    const summary = compareSummary(arms, baseIdx, metrics);
    console.error(wrote.length > 0 ? `${summary}; wrote ${wrote.join(', ')}` : summary);
    return 0;
  },
};
