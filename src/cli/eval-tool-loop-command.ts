import { writeFileSync } from 'node:fs';
import { ContextBudget } from '../eval/context-budget.js';
import { BUILTIN_SCENARIOS } from '../eval/scenarios/builtin-scenarios.js';
import { tinyModelScenarios } from '../eval/scenarios/tiny-model-scenarios.js';
import {
  formatCallLog,
  formatRunsTable,
  formatToolLoopTotal,
  hasIssues,
  runPassed,
} from '../eval/tool-loop-report.js';
import { runToolLoop, type ToolLoopRun } from '../eval/tool-loop.js';
import { loadScenario, type ToolScenario } from '../eval/tool-scenario.js';
import { choice } from './bench-serve-command.js';
import { intOption, numberOption, UsageError, type Command } from './command.js';
import { endpointOf, ENDPOINT_OPTIONS, modelOf } from './eval-common.js';

/** The scenario sets of `--scenarios`. */
export const SCENARIO_SETS = ['default', 'seed-002'] as const;
export type ScenarioSet = (typeof SCENARIO_SETS)[number];

/**
 * `--scenario` names or JSON paths when given; else the set: `default` is the bundled model's
 * held-out tool conversations (`count` of them), `seed-002` the three agent probes of seed 002
 * (tools the bundled model never saw).
 */
export function resolveScenarios(
  specs: readonly string[],
  set: ScenarioSet = 'default',
  count = DEFAULT_NUM_SCENARIOS,
): ToolScenario[] {
  if (specs.length === 0)
    return set === 'seed-002' ? [...BUILTIN_SCENARIOS] : tinyModelScenarios(count);
  return specs
    .flatMap((s) => s.split(','))
    .map((s) => {
      const builtin = BUILTIN_SCENARIOS.find((b) => b.name === s);
      if (builtin) return builtin;
      if (s.endsWith('.json')) return loadScenario(s);
      const names = BUILTIN_SCENARIOS.map((b) => b.name).join(', ');
      throw new UsageError(`unknown scenario "${s}" (built-ins: ${names}; or a .json file)`);
    });
}

function printScenario(sc: ToolScenario, runs: readonly ToolLoopRun[], verbose: boolean): void {
  const passed = runs.filter(runPassed).length;
  console.log(`\n## ${sc.name}: ${passed}/${runs.length} runs reached a clean final answer\n`);
  console.log(formatRunsTable(runs));
  for (const r of runs) {
    if (!verbose && !hasIssues(r)) continue;
    console.log(`\nrun ${r.run + 1} calls:\n${formatCallLog(r) || '(no tool calls)'}`);
  }
}

const DEFAULT_NUM_SCENARIOS = 8;

/** `moeserve eval tool-loop`: seed 002's multi-turn agent probe. */
export const evalToolLoopCommand: Command = {
  name: 'eval tool-loop',
  summary: 'multi-turn tool-calling loop with scripted tool results',
  usage: '[--scenarios default|seed-002] [--scenario NAME|FILE.json ...]',
  options: {
    ...ENDPOINT_OPTIONS,
    scenarios: {
      type: 'string',
      default: 'default',
      description:
        "default: the bundled model's held-out tool conversations (src/datagen tools); seed-002: seed 002's agent probes",
      valueName: SCENARIO_SETS.join('|'),
    },
    'num-scenarios': {
      type: 'string',
      default: String(DEFAULT_NUM_SCENARIOS),
      description: 'how many of the default set',
      valueName: 'N',
    },
    scenario: {
      type: 'string',
      multiple: true,
      description: `seed-002 name (${BUILTIN_SCENARIOS.map((s) => s.name).join(', ')}) or scenario JSON path; repeatable; replaces --scenarios`,
      valueName: 'NAME|PATH',
    },
    runs: {
      type: 'string',
      default: '3',
      description: 'conversations per scenario',
      valueName: 'N',
    },
    'max-turns': {
      type: 'string',
      description: "turn cap; default the scenario's (12)",
      valueName: 'N',
    },
    'max-tokens': {
      type: 'string',
      default: '2048',
      description: 'max_tokens per turn',
      valueName: 'N',
    },
    temperature: {
      type: 'string',
      default: '0',
      description: 'sampling temperature',
      valueName: 'T',
    },
    output: {
      type: 'string',
      description: 'write every run (calls included) as JSON',
      valueName: 'PATH',
    },
    verbose: {
      type: 'boolean',
      default: false,
      description: 'print the call log of every run, not only failing ones',
    },
    stream: {
      type: 'boolean',
      default: false,
      description: 'stream every turn and reassemble the deltas, as an agent client does',
    },
  },
  async run(values) {
    const endpoint = endpointOf(values);
    const scenarios = resolveScenarios(
      (values['scenario'] as string[] | undefined) ?? [],
      choice(values, 'scenarios', SCENARIO_SETS),
      intOption(values, 'num-scenarios', DEFAULT_NUM_SCENARIOS),
    );
    const model = await modelOf(values, endpoint);
    const opts = {
      endpoint,
      model,
      temperature: numberOption(values, 'temperature', 0),
      maxTokens: new ContextBudget(endpoint, intOption(values, 'max-tokens', 2048)),
      stream: values['stream'] === true,
      ...(values['max-turns'] !== undefined
        ? { maxTurns: intOption(values, 'max-turns', 12) }
        : {}),
    };
    const all: ToolLoopRun[] = [];
    for (const sc of scenarios) {
      const runs: ToolLoopRun[] = [];
      for (let i = 0; i < intOption(values, 'runs', 3); i++)
        runs.push(await runToolLoop(sc, opts, i));
      printScenario(sc, runs, values['verbose'] === true);
      all.push(...runs);
    }
    console.log(`\n${formatToolLoopTotal(all, scenarios.length)}`);
    if (typeof values['output'] === 'string')
      writeFileSync(values['output'], JSON.stringify({ model, runs: all }, null, 2) + '\n');
    return all.every(runPassed) ? 0 : 1;
  },
};
