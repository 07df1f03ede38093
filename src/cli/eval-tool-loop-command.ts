import { writeFileSync } from 'node:fs';
import { BUILTIN_SCENARIOS } from '../eval/scenarios/builtin-scenarios.js';
import { formatCallLog, formatRunsTable, hasIssues, runPassed } from '../eval/tool-loop-report.js';
import { runToolLoop, type ToolLoopRun } from '../eval/tool-loop.js';
import { loadScenario, type ToolScenario } from '../eval/tool-scenario.js';
import { intOption, numberOption, UsageError, type Command } from './command.js';
import { endpointOf, ENDPOINT_OPTIONS, modelOf } from './eval-common.js';

/** Built-in names or paths to scenario JSON files; all built-ins when none is given. */
export function resolveScenarios(specs: readonly string[]): ToolScenario[] {
  if (specs.length === 0) return [...BUILTIN_SCENARIOS];
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

/** `moeserve eval tool-loop`: seed 002's multi-turn agent probe. */
export const evalToolLoopCommand: Command = {
  name: 'eval tool-loop',
  summary: 'multi-turn tool-calling loop with scripted tool results',
  usage: '[--scenario NAME|FILE.json ...]',
  options: {
    ...ENDPOINT_OPTIONS,
    scenario: {
      type: 'string',
      multiple: true,
      description: `built-in name (${BUILTIN_SCENARIOS.map((s) => s.name).join(', ')}) or scenario JSON path; repeatable; default all built-ins`,
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
    const scenarios = resolveScenarios((values['scenario'] as string[] | undefined) ?? []);
    const model = await modelOf(values, endpoint);
    const opts = {
      endpoint,
      model,
      temperature: numberOption(values, 'temperature', 0),
      maxTokens: intOption(values, 'max-tokens', 2048),
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
    if (typeof values['output'] === 'string')
      writeFileSync(values['output'], JSON.stringify({ model, runs: all }, null, 2) + '\n');
    return all.every(runPassed) ? 0 : 1;
  },
};
