import { isMalformed, type CallRecord } from './tool-call-analysis.js';
import type { ToolLoopRun } from './tool-loop.js';

function finalCell(r: ToolLoopRun): string {
  if (r.error) return `error: ${r.error.slice(0, 60)}`;
  if (r.finalAnswer) return 'yes';
  return r.hitTurnCap ? 'no (hit turn cap)' : 'no (empty reply)';
}

/** Seed 002's table for one scenario: one column per run. */
export function formatRunsTable(runs: readonly ToolLoopRun[]): string {
  const head = ['', ...runs.map((r) => `run ${r.run + 1}`)];
  const rows: [string, (r: ToolLoopRun) => string][] = [
    ['tool calls', (r) => String(r.numToolCalls)],
    ['malformed args', (r) => String(r.numMalformed)],
    ['repeated identical calls', (r) => String(r.numRepeated)],
    ['reached a final answer', finalCell],
    [
      'expected call order',
      (r) => (r.expectedOrder === null ? '-' : r.expectedOrder ? 'yes' : 'no'),
    ],
    ['turns', (r) => String(r.turns)],
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const [label, cell] of rows) lines.push(`| ${[label, ...runs.map(cell)].join(' | ')} |`);
  return lines.join('\n');
}

function callNote(c: CallRecord): string {
  const notes: string[] = [];
  if (c.parseError) notes.push(`not JSON (${c.parseError})`);
  if (c.schemaErrors.length > 0) notes.push(c.schemaErrors.join('; '));
  if (c.repeated) notes.push('repeated');
  if (c.drift.length > 0) notes.push(`drift: ${c.drift.join(', ')}`);
  return notes.length > 0 ? `  <- ${notes.join(' | ')}` : '';
}

/** Per-turn arguments, the way seed 002 shows degradation within one conversation. */
export function formatCallLog(run: ToolLoopRun): string {
  return run.calls
    .map((c) => `turn ${String(c.turn).padEnd(3)} ${c.name} ${c.rawArguments}${callNote(c)}`)
    .join('\n');
}

/** True when the run is what a healthy model does: an answer, no malformed or repeated calls. */
export function runPassed(r: ToolLoopRun): boolean {
  return r.finalAnswer && !r.error && r.numMalformed === 0 && r.numRepeated === 0;
}

export function hasIssues(r: ToolLoopRun): boolean {
  return !runPassed(r) || r.calls.some((c) => isMalformed(c) || c.drift.length > 0);
}

/** The one-line total over every run of every scenario. */
export function formatToolLoopTotal(runs: readonly ToolLoopRun[], numScenarios: number): string {
  const pct = (a: number, b: number) => (b === 0 ? '-' : `${((100 * a) / b).toFixed(1)}%`);
  const passed = runs.filter(runPassed).length;
  const calls = runs.reduce((s, r) => s + r.numToolCalls, 0);
  const malformed = runs.reduce((s, r) => s + r.numMalformed, 0);
  const expected = runs.filter((r) => r.expectedOrder !== null);
  const inOrder = expected.filter((r) => r.expectedOrder).length;
  return (
    `total: ${passed}/${runs.length} runs passed (${pct(passed, runs.length)}) over ` +
    `${numScenarios} scenarios; ${calls} tool calls, ${calls - malformed} well-formed ` +
    `(${pct(calls - malformed, calls)}); expected calls in order in ${inOrder}/${expected.length} runs`
  );
}
