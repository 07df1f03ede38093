import { readFileSync } from 'node:fs';
import type { JsonSchema } from './json-schema-lite.js';

/** A tool the model may call; its i-th call is answered with results[min(i, last)]. */
export interface ScenarioTool {
  name: string;
  description: string;
  parameters: JsonSchema;
  results: unknown[];
}

/** A multi-turn agent task with played-back tool results (seed 002). */
export interface ToolScenario {
  name: string;
  description?: string;
  system?: string;
  task: string;
  tools: ScenarioTool[];
  /** Tool names in the order a correct agent calls them, for the report. */
  expectedCalls?: string[];
  /** Turn cap; default 12. */
  maxTurns?: number;
}

/** Checks the shape of a scenario read from JSON, naming the first problem. */
export function checkScenario(s: unknown, source: string): ToolScenario {
  const sc = s as Partial<ToolScenario>;
  const fail = (what: string): never => {
    throw new Error(`${source}: ${what}`);
  };
  if (typeof sc.name !== 'string' || sc.name === '') fail('"name" must be a non-empty string');
  if (typeof sc.task !== 'string' || sc.task === '') fail('"task" must be a non-empty string');
  if (!Array.isArray(sc.tools) || sc.tools.length === 0) fail('"tools" must be a non-empty array');
  for (const [i, t] of (sc.tools ?? []).entries()) {
    if (typeof t.name !== 'string') fail(`tools[${i}].name must be a string`);
    if (typeof t.parameters !== 'object' || t.parameters === null)
      fail(`tools[${i}].parameters must be a JSON schema object`);
    if (!Array.isArray(t.results) || t.results.length === 0)
      fail(`tools[${i}].results must be a non-empty array of scripted results`);
  }
  return sc as ToolScenario;
}

export function loadScenario(path: string): ToolScenario {
  return checkScenario(JSON.parse(readFileSync(path, 'utf8')) as unknown, path);
}

export function scriptedResult(tool: ScenarioTool, callIdx: number): unknown {
  return tool.results[Math.min(callIdx, tool.results.length - 1)];
}

/** The `tools` array of a chat request. */
export function toolDefinitions(s: ToolScenario): unknown[] {
  return s.tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}
