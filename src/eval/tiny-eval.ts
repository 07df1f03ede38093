import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { answersEqual, extractAnswer } from './gsm8k-answer.js';
import { chatCompletion, type EndpointOptions } from './openai-json-client.js';
import { canonicalJson, isMalformed } from './tool-call-analysis.js';
import { runToolLoop } from './tool-loop.js';
import { checkScenario, type ToolScenario } from './tool-scenario.js';

/** A held-out scenario with the arguments a correct first call carries, per expected call. */
export interface TinyToolScenario extends ToolScenario {
  expectedArguments: unknown[];
}

/** data/tiny-m3/eval-tiny.json, written by `python3 training/gen_data.py --eval-out`. */
export interface TinyEvalSet {
  seed: number;
  arithmetic: { question: string; answer: number; op: string }[];
  toolScenarios: TinyToolScenario[];
  chat: string[];
}

export function loadTinyEvalSet(path: string): TinyEvalSet {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Partial<TinyEvalSet>;
  const fail = (what: string): never => {
    throw new Error(`${path}: ${what}`);
  };
  if (!Array.isArray(s.arithmetic) || s.arithmetic.length === 0)
    fail('"arithmetic" must be a non-empty array');
  if (!Array.isArray(s.toolScenarios)) fail('"toolScenarios" must be an array');
  if (!Array.isArray(s.chat)) fail('"chat" must be an array');
  for (const [i, a] of s.arithmetic!.entries())
    if (typeof a.question !== 'string' || !Number.isInteger(a.answer))
      fail(`arithmetic[${i}] needs a string "question" and an integer "answer"`);
  s.toolScenarios!.forEach((sc, i) => checkScenario(sc, `${path}: toolScenarios[${i}]`));
  return s as TinyEvalSet;
}

/** Markup that must never reach `content` of a plain reply: M3 control strings and tags. */
const MARKUP =
  /<\/?mm:think>|\]<\]minimax\[>\[|\]~b\]|\]~!b\[|\[e~\[|<\/?(tool_call|invoke|response)\b/;

export function hasMarkup(content: string): boolean {
  return MARKUP.test(content);
}

export interface TinyEvalOptions {
  endpoint: EndpointOptions;
  model: string;
  maxTokens: number;
  /** Cap on each part's item count (the whole set when absent). */
  limit?: number;
  onProgress?: (part: string, done: number, todo: number) => void;
}

export interface TinyEvalReport {
  arithmetic: {
    n: number;
    exact: number;
    exactPct: number;
    byOp: Record<string, { n: number; exact: number }>;
  };
  tools: {
    scenarios: number;
    calls: number;
    schemaValid: number;
    schemaValidPct: number;
    finalAnswer: number;
    finalAnswerPct: number;
    expectedOrder: number;
    firstCallExact: number;
    errors: number;
  };
  chat: { n: number; clean: number; cleanPct: number; empty: number; markup: number };
  stop: { n: number; stopped: number; stopPct: number };
  speed: { requests: number; medianOutputTokPerS: number };
  failures: { part: string; prompt: string; got: string }[];
}

const pct = (a: number, n: number): number => (n === 0 ? 0 : Math.round((1e4 * a) / n) / 100);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One user turn at temperature 0: content, whether it stopped, and output tok/s. */
async function ask(o: TinyEvalOptions, user: string) {
  const t0 = performance.now();
  const r = await chatCompletion(o.endpoint, {
    model: o.model,
    messages: [{ role: 'user', content: user }],
    temperature: 0,
    max_tokens: o.maxTokens,
  });
  const s = (performance.now() - t0) / 1000;
  return { r, tokPerS: (r.completionTokens ?? 0) / s };
}

/** Runs every part one request at a time (single-stream, so tok/s is per-stream speed). */
export async function runTinyEval(set: TinyEvalSet, o: TinyEvalOptions): Promise<TinyEvalReport> {
  const lim = <T>(xs: T[]): T[] => (o.limit ? xs.slice(0, o.limit) : xs);
  const rep: TinyEvalReport = emptyReport();
  const speeds: number[] = [];
  const arith = lim(set.arithmetic);
  for (const [i, item] of arith.entries()) {
    const { r, tokPerS } = await ask(o, item.question);
    speeds.push(tokPerS);
    countStop(rep, r.finishReason);
    const ok = answersEqual(extractAnswer(r.content), String(item.answer));
    const op = (rep.arithmetic.byOp[item.op] ??= { n: 0, exact: 0 });
    op.n++;
    if (ok) op.exact++;
    else
      rep.failures.push({ part: 'arithmetic', prompt: item.question, got: r.content.slice(0, 80) });
    rep.arithmetic.n++;
    rep.arithmetic.exact += ok ? 1 : 0;
    o.onProgress?.('arithmetic', i + 1, arith.length);
  }
  const chat = lim(set.chat);
  for (const [i, user] of chat.entries()) {
    const { r, tokPerS } = await ask(o, user);
    speeds.push(tokPerS);
    countStop(rep, r.finishReason);
    const empty = r.content.trim() === '';
    const markup = hasMarkup(r.content) || r.toolCalls.length > 0;
    rep.chat.n++;
    rep.chat.empty += empty ? 1 : 0;
    rep.chat.markup += markup ? 1 : 0;
    if (!empty && !markup) rep.chat.clean++;
    else rep.failures.push({ part: 'chat', prompt: user, got: r.content.slice(0, 80) });
    o.onProgress?.('chat', i + 1, chat.length);
  }
  const scenarios = lim(set.toolScenarios);
  for (const [i, sc] of scenarios.entries()) {
    await scoreToolLoop(rep, sc, o);
    o.onProgress?.('tools', i + 1, scenarios.length);
  }
  finish(rep, speeds);
  return rep;
}

async function scoreToolLoop(rep: TinyEvalReport, sc: TinyToolScenario, o: TinyEvalOptions) {
  const run = await runToolLoop(
    sc,
    { endpoint: o.endpoint, model: o.model, temperature: 0, maxTokens: o.maxTokens },
    0,
  );
  const t = rep.tools;
  t.scenarios++;
  t.calls += run.calls.length;
  t.schemaValid += run.calls.filter((c) => !isMalformed(c)).length;
  t.finalAnswer += run.finalAnswer && !hasMarkup(run.finalContent) ? 1 : 0;
  t.expectedOrder += run.expectedOrder ? 1 : 0;
  t.errors += run.error ? 1 : 0;
  const first = run.calls[0];
  if (first && first.parseError === undefined && sc.expectedCalls?.[0] === first.name) {
    const same =
      canonicalJson(JSON.parse(first.rawArguments)) === canonicalJson(sc.expectedArguments[0]);
    t.firstCallExact += same ? 1 : 0;
  }
  if (!run.finalAnswer || run.calls.some(isMalformed))
    rep.failures.push({
      part: 'tools',
      prompt: sc.task,
      got: run.error ?? run.finalContent.slice(0, 80),
    });
}

function countStop(rep: TinyEvalReport, finishReason: string) {
  rep.stop.n++;
  rep.stop.stopped += finishReason === 'stop' ? 1 : 0;
}

function emptyReport(): TinyEvalReport {
  return {
    arithmetic: { n: 0, exact: 0, exactPct: 0, byOp: {} },
    tools: {
      scenarios: 0,
      calls: 0,
      schemaValid: 0,
      schemaValidPct: 0,
      finalAnswer: 0,
      finalAnswerPct: 0,
      expectedOrder: 0,
      firstCallExact: 0,
      errors: 0,
    },
    chat: { n: 0, clean: 0, cleanPct: 0, empty: 0, markup: 0 },
    stop: { n: 0, stopped: 0, stopPct: 0 },
    speed: { requests: 0, medianOutputTokPerS: 0 },
    failures: [],
  };
}

function finish(rep: TinyEvalReport, speeds: number[]) {
  rep.arithmetic.exactPct = pct(rep.arithmetic.exact, rep.arithmetic.n);
  rep.tools.schemaValidPct = pct(rep.tools.schemaValid, rep.tools.calls);
  rep.tools.finalAnswerPct = pct(rep.tools.finalAnswer, rep.tools.scenarios);
  rep.chat.cleanPct = pct(rep.chat.clean, rep.chat.n);
  rep.stop.stopPct = pct(rep.stop.stopped, rep.stop.n);
  rep.speed = {
    requests: speeds.length,
    medianOutputTokPerS: Math.round(median(speeds) * 10) / 10,
  };
}

/** The printed table: one row per metric with the target. */
export function tinyEvalTable(rep: TinyEvalReport): string {
  const rows: [string, string, string][] = [
    [
      'arithmetic exact (held-out phrasings)',
      `${rep.arithmetic.exact}/${rep.arithmetic.n} = ${rep.arithmetic.exactPct}%`,
      '>= 80%',
    ],
    ...Object.entries(rep.arithmetic.byOp).map(([op, v]): [string, string, string] => [
      `  op ${op}`,
      `${v.exact}/${v.n}`,
      '',
    ]),
    [
      'stop rate (arithmetic + chat)',
      `${rep.stop.stopped}/${rep.stop.n} = ${rep.stop.stopPct}%`,
      '100%',
    ],
    [
      'tool calls schema-valid',
      `${rep.tools.schemaValid}/${rep.tools.calls} = ${rep.tools.schemaValidPct}%`,
      '>= 98%',
    ],
    [
      'tool loops reaching a final answer',
      `${rep.tools.finalAnswer}/${rep.tools.scenarios} = ${rep.tools.finalAnswerPct}%`,
      '>= 95%',
    ],
    ['  expected tools in order', `${rep.tools.expectedOrder}/${rep.tools.scenarios}`, ''],
    ['  first call exactly right', `${rep.tools.firstCallExact}/${rep.tools.scenarios}`, ''],
    [
      'chat clean (non-empty, no markup)',
      `${rep.chat.clean}/${rep.chat.n} = ${rep.chat.cleanPct}%`,
      '100%',
    ],
    ['single-stream output tok/s (median)', `${rep.speed.medianOutputTokPerS}`, '>= 150'],
  ];
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  return rows.map(([a, b, c]) => `${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`.trimEnd()).join('\n');
}
