import { CallAnalyzer, isMalformed, type CallRecord } from './tool-call-analysis.js';
import {
  chatCompletion,
  type ChatMessage,
  type EndpointOptions,
  type ToolCall,
} from './openai-json-client.js';
import { chatCompletionStream } from './openai-stream-chat.js';
import { withMaxTokens, type MaxTokens } from './context-budget.js';
import { scriptedResult, toolDefinitions, type ToolScenario } from './tool-scenario.js';

export interface ToolLoopOptions {
  endpoint: EndpointOptions;
  model: string;
  temperature: number;
  maxTokens: MaxTokens;
  /** Overrides the scenario's own cap. */
  maxTurns?: number;
  /** Stream every turn and reassemble it (what an agent client sees), instead of one JSON reply. */
  stream?: boolean;
}

/** What seed 002 tabulates for one run. */
export interface ToolLoopRun {
  scenario: string;
  run: number;
  turns: number;
  calls: CallRecord[];
  numToolCalls: number;
  numMalformed: number;
  numRepeated: number;
  finalAnswer: boolean;
  hitTurnCap: boolean;
  /** The called tool names matched `expectedCalls` exactly, in order. */
  expectedOrder: boolean | null;
  finalContent: string;
  error?: string;
}

/** Answers each call: its scripted result, or an error the model can recover from. */
function toolMessage(
  sc: ToolScenario,
  call: ToolCall,
  rec: CallRecord,
  counts: Map<string, number>,
) {
  let content: unknown;
  const tool = sc.tools.find((t) => t.name === rec.name);
  if (rec.parseError) content = { error: `arguments are not valid JSON: ${rec.parseError}` };
  else if (!tool || rec.schemaErrors.length > 0) content = { error: rec.schemaErrors.join('; ') };
  else {
    const n = counts.get(tool.name) ?? 0;
    counts.set(tool.name, n + 1);
    content = scriptedResult(tool, n);
  }
  return { role: 'tool' as const, tool_call_id: call.id, content: JSON.stringify(content) };
}

function finishRun(sc: ToolScenario, run: ToolLoopRun): ToolLoopRun {
  run.numToolCalls = run.calls.length;
  run.numMalformed = run.calls.filter(isMalformed).length;
  run.numRepeated = run.calls.filter((c) => c.repeated).length;
  run.expectedOrder = sc.expectedCalls
    ? JSON.stringify(run.calls.map((c) => c.name)) === JSON.stringify(sc.expectedCalls)
    : null;
  return run;
}

function emptyRun(scenario: string, run: number): ToolLoopRun {
  return {
    scenario,
    run,
    turns: 0,
    calls: [],
    numToolCalls: 0,
    numMalformed: 0,
    numRepeated: 0,
    finalAnswer: false,
    hitTurnCap: false,
    expectedOrder: null,
    finalContent: '',
  };
}

/** Plays one conversation until a final answer, an empty turn, an error or the turn cap. */
export async function runToolLoop(
  sc: ToolScenario,
  o: ToolLoopOptions,
  runIdx: number,
): Promise<ToolLoopRun> {
  const run = emptyRun(sc.name, runIdx);
  const messages: ChatMessage[] = [
    ...(sc.system ? [{ role: 'system' as const, content: sc.system }] : []),
    { role: 'user', content: sc.task },
  ];
  const analyzer = new CallAnalyzer(sc.tools);
  const counts = new Map<string, number>();
  const maxTurns = o.maxTurns ?? sc.maxTurns ?? 12;
  for (let turn = 0; turn < maxTurns; turn++) {
    run.turns = turn + 1;
    const complete = o.stream ? chatCompletionStream : chatCompletion;
    const body = {
      model: o.model,
      messages,
      tools: toolDefinitions(sc),
      tool_choice: 'auto',
      temperature: o.temperature,
    };
    const r = await withMaxTokens(o.maxTokens, body)
      .then((b) => complete(o.endpoint, b))
      .catch((e: Error) => e);
    if (r instanceof Error) return finishRun(sc, { ...run, error: r.message });
    if (r.toolCalls.length === 0) {
      run.finalContent = r.content;
      run.finalAnswer = r.content.trim() !== '';
      return finishRun(sc, run);
    }
    messages.push({ role: 'assistant', content: r.content || null, tool_calls: r.toolCalls });
    for (const call of r.toolCalls) {
      const rec = analyzer.analyze(turn, call.function.name, call.function.arguments);
      run.calls.push(rec);
      messages.push(toolMessage(sc, call, rec, counts));
    }
  }
  return finishRun(sc, { ...run, hitTurnCap: true });
}
