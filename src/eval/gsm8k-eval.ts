import { writeFileSync } from 'node:fs';
import { mapConcurrent } from '../bench/semaphore.js';
import { exactMatch, flexibleExtract, INVALID, strictMatch } from './gsm8k-answer.js';
import { withMaxTokens, type MaxTokens } from './context-budget.js';
import type { Gsm8kItem } from './gsm8k-dataset.js';
import {
  chatCompletion,
  textCompletion,
  type ChatMessage,
  type EndpointOptions,
} from './openai-json-client.js';

/** `completions` sends one k-shot prompt string; `chat` sends the shots as alternating turns. */
export type Gsm8kMode = 'chat' | 'completions';

/** lm-eval gsm8k.yaml v3 `until`. */
export const GSM8K_STOP = ['Question:', '</s>', '<|im_end|>'];

const asText = (q: string): string => `Question: ${q}\nAnswer:`;

/** lm-eval layout: target delimiter " ", shots joined by a blank line. */
export function fewShotPrompt(shots: readonly Gsm8kItem[], question: string): string {
  return [...shots.map((s) => `${asText(s.question)} ${s.answer}`), asText(question)].join('\n\n');
}

/** lm-eval's --apply_chat_template --fewshot_as_multiturn layout. */
export function fewShotMessages(shots: readonly Gsm8kItem[], question: string): ChatMessage[] {
  const turns: ChatMessage[] = [];
  for (const s of shots) {
    turns.push({ role: 'user', content: asText(s.question) });
    turns.push({ role: 'assistant', content: s.answer });
  }
  turns.push({ role: 'user', content: asText(question) });
  return turns;
}

export interface Gsm8kScore {
  strict: string;
  flexible: string;
  strictCorrect: boolean;
  flexibleCorrect: boolean;
}

/** Both lm-eval filters on the same generation. */
export function scoreResponse(response: string, answerField: string): Gsm8kScore {
  const strict = strictMatch(response);
  const flexible = flexibleExtract(response);
  return {
    strict,
    flexible,
    strictCorrect: exactMatch(strict, answerField),
    flexibleCorrect: exactMatch(flexible, answerField),
  };
}

export interface Gsm8kSample extends Partial<Gsm8kScore> {
  idx: number;
  response: string;
  finish_reason?: string;
  error?: string;
}

export interface Gsm8kResult {
  mode: Gsm8kMode;
  num_fewshot: number;
  n: number;
  n_err: number;
  strict_match: number;
  strict_match_stderr: number;
  flexible_extract: number;
  flexible_extract_stderr: number;
  invalid_strict: number;
  invalid_flexible: number;
}

export interface Gsm8kOptions {
  endpoint: EndpointOptions;
  model: string;
  mode: Gsm8kMode;
  shots: readonly Gsm8kItem[];
  items: readonly Gsm8kItem[];
  maxTokens: MaxTokens;
  concurrency: number;
  onSample?: (done: number, total: number) => void;
}

async function sampleOne(o: Gsm8kOptions, idx: number, item: Gsm8kItem): Promise<Gsm8kSample> {
  const common = { model: o.model, temperature: 0, stop: GSM8K_STOP };
  try {
    const r =
      o.mode === 'chat'
        ? await chatCompletion(
            o.endpoint,
            await withMaxTokens(o.maxTokens, {
              ...common,
              messages: fewShotMessages(o.shots, item.question),
            }),
          )
        : await textCompletion(
            o.endpoint,
            await withMaxTokens(o.maxTokens, {
              ...common,
              prompt: fewShotPrompt(o.shots, item.question),
            }),
          );
    // With a reasoning parser on, only the final content is scored (as vLLM's gsm8k eval does).
    return {
      idx,
      response: r.content,
      finish_reason: r.finishReason,
      ...scoreResponse(r.content, item.answer),
    };
  } catch (e) {
    return { idx, response: '', error: (e as Error).message };
  }
}

/** Mean ± standard error with ddof=1, as lm-eval reports it. */
function meanStderr(hits: number, n: number): [number, number] {
  if (n === 0) return [0, 0];
  const p = hits / n;
  return [p, n > 1 ? Math.sqrt((p * (1 - p)) / (n - 1)) : 0];
}

export function aggregateGsm8k(
  samples: readonly Gsm8kSample[],
  mode: Gsm8kMode,
  k: number,
): Gsm8kResult {
  const n = samples.length;
  const [strict, strictErr] = meanStderr(samples.filter((s) => s.strictCorrect).length, n);
  const [flex, flexErr] = meanStderr(samples.filter((s) => s.flexibleCorrect).length, n);
  return {
    mode,
    num_fewshot: k,
    n,
    n_err: samples.filter((s) => s.error !== undefined).length,
    strict_match: strict,
    strict_match_stderr: strictErr,
    flexible_extract: flex,
    flexible_extract_stderr: flexErr,
    invalid_strict: samples.filter((s) => (s.strict ?? INVALID) === INVALID).length,
    invalid_flexible: samples.filter((s) => (s.flexible ?? INVALID) === INVALID).length,
  };
}

export async function runGsm8k(
  o: Gsm8kOptions,
): Promise<{ result: Gsm8kResult; samples: Gsm8kSample[] }> {
  let done = 0;
  const samples = await mapConcurrent(o.items, o.concurrency, async (item, idx) => {
    const s = await sampleOne(o, idx, item);
    o.onSample?.(++done, o.items.length);
    return s;
  });
  return { result: aggregateGsm8k(samples, o.mode, o.shots.length), samples };
}

export function writeGsm8kOutput(
  path: string,
  result: Gsm8kResult,
  samples: readonly Gsm8kSample[],
) {
  writeFileSync(path, samples.map((s) => JSON.stringify(s)).join('\n') + '\n');
  writeFileSync(`${path}.summary.json`, JSON.stringify(result, null, 2) + '\n');
}

/** lm-eval's results table. */
export function formatGsm8kResult(r: Gsm8kResult): string {
  const row = (filter: string, v: number, se: number) =>
    `|gsm8k|3|${filter}|${r.num_fewshot}|exact_match|↑|${v.toFixed(4)}|±|${se.toFixed(4)}|`;
  return [
    '|Tasks|Version|Filter|n-shot|Metric| |Value| |Stderr|',
    '|-----|------:|------|-----:|------|-|----:|-|-----:|',
    row('flexible-extract', r.flexible_extract, r.flexible_extract_stderr),
    row('strict-match', r.strict_match, r.strict_match_stderr),
    '',
    `mode=${r.mode} n=${r.n} errors=${r.n_err} invalid: strict=${r.invalid_strict} flexible=${r.invalid_flexible}`,
  ].join('\n');
}

/** The one-line total. */
export function formatGsm8kTotal(r: Gsm8kResult): string {
  const count = (p: number) => Math.round(p * r.n);
  const pct = (p: number) => `${(100 * p).toFixed(1)}%`;
  return (
    `total: ${r.n} questions, ${count(r.strict_match)} correct by strict-match ` +
    `(${pct(r.strict_match)}), ${count(r.flexible_extract)} by flexible-extract ` +
    `(${pct(r.flexible_extract)}), ${r.n_err} errors`
  );
}
