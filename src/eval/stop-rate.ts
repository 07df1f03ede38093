import { appendFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { mapConcurrent } from '../bench/semaphore.js';
import { answersEqual, extractAnswer, goldAnswer } from './gsm8k-answer.js';
import type { Gsm8kItem } from './gsm8k-dataset.js';
import { readJsonl, terminateLastLine } from './jsonl.js';
import { withMaxTokens, type MaxTokens } from './context-budget.js';
import { chatCompletion, type EndpointOptions } from './openai-json-client.js';
import {
  summarizeStopRate,
  type StopRateRecord,
  type StopRateSummary,
} from './stop-rate-summary.js';

export const STOP_RATE_PROMPT_SUFFIX =
  '\n\nSolve step by step. End with a final line of the form "#### <number>".';

export interface StopRateOptions {
  endpoint: EndpointOptions;
  model: string;
  items: readonly Gsm8kItem[];
  /** The `.jsonl` path; the summary goes to `<output>.summary.json`. */
  output: string;
  maxTokens: MaxTokens;
  concurrency: number;
  temperature: number;
  onRecord?: (rec: StopRateRecord, done: number, todo: number) => void;
}

async function runOne(o: StopRateOptions, idx: number, item: Gsm8kItem): Promise<StopRateRecord> {
  const t0 = performance.now();
  const gold = goldAnswer(item.answer);
  try {
    const body = {
      model: o.model,
      messages: [{ role: 'user', content: item.question + STOP_RATE_PROMPT_SUFFIX }],
      temperature: o.temperature,
    };
    const r = await chatCompletion(o.endpoint, await withMaxTokens(o.maxTokens, body));
    const pred = extractAnswer(r.content);
    return {
      idx,
      finish_reason: r.finishReason,
      completion_tokens: r.completionTokens ?? null,
      prompt_tokens: r.promptTokens ?? null,
      reasoning_tokens: r.reasoningTokens ?? null,
      reasoning_len: r.reasoning.length,
      content_len: r.content.length,
      pred,
      gold,
      correct: answersEqual(pred, gold),
      latency_s: (performance.now() - t0) / 1000,
    };
  } catch (e) {
    const error = (e as Error).message;
    return { idx, gold, error, latency_s: (performance.now() - t0) / 1000 };
  }
}

/**
 * Runs the items not yet answered in `output` (errored ones are retried), appending one
 * record per request as it finishes so an interrupted run resumes where it stopped.
 */
export async function runStopRate(o: StopRateOptions): Promise<StopRateSummary> {
  const done = new Set(
    readJsonl<StopRateRecord>(o.output)
      .filter((r) => r.error === undefined)
      .map((r) => r.idx),
  );
  const todo = o.items.map((_, i) => i).filter((i) => !done.has(i));
  terminateLastLine(o.output);
  let finished = 0;
  await mapConcurrent(todo, o.concurrency, async (idx) => {
    const rec = await runOne(o, idx, o.items[idx] as Gsm8kItem);
    appendFileSync(o.output, JSON.stringify(rec) + '\n');
    o.onRecord?.(rec, ++finished, todo.length);
  });
  return writeSummary(o.output, o.items.length);
}

/** Summarises the last record of each index below `numItems` and writes the summary file. */
export function writeSummary(output: string, numItems: number): StopRateSummary {
  const latest = new Map<number, StopRateRecord>();
  for (const r of readJsonl<StopRateRecord>(output)) if (r.idx < numItems) latest.set(r.idx, r);
  const records = [...latest.values()].sort((a, b) => a.idx - b.idx);
  const summary = summarizeStopRate(records);
  writeFileSync(`${output}.summary.json`, JSON.stringify(summary, null, 2) + '\n');
  return summary;
}
