import type { StreamRecord } from './openai-stream-request.js';

/**
 * Which chunk counts as the first token, and where a request ends (serving-anchors §2.2).
 * - `sglang`: chunks with non-empty text (content or reasoning); E2E ends at the last line
 *   received, `[DONE]` included.
 * - `vllm`: every chunk with a non-empty `choices` array, even a role-only delta; E2E ends at
 *   the last such chunk.
 */
export type TtftConvention = 'sglang' | 'vllm';

/** Per-request latencies in seconds. ITL is per chunk, not per token. */
export interface RequestTiming {
  ttft: number;
  itl: number[];
  e2e: number;
  outputTokens: number;
  promptTokens: number;
  /** Token counts came from the server's `usage`, not from counting chunks. */
  usageReported: boolean;
}

export function deriveTiming(
  rec: StreamRecord,
  convention: TtftConvention,
  fallbackPromptTokens: number,
): RequestTiming {
  const times = convention === 'sglang' ? rec.textTimes : rec.choiceTimes;
  const endMs =
    convention === 'sglang' ? rec.lastLineMs : (times[times.length - 1] ?? rec.lastLineMs);
  const e2e = Math.max(0, endMs - rec.startMs) / 1000;
  const first = times[0];
  const ttft = first === undefined ? e2e : (first - rec.startMs) / 1000;
  const itl: number[] = [];
  for (let i = 1; i < times.length; i++)
    itl.push(((times[i] as number) - (times[i - 1] as number)) / 1000);
  return {
    ttft,
    itl,
    e2e,
    outputTokens: rec.outputTokens ?? rec.textTimes.length,
    promptTokens: rec.promptTokens ?? fallbackPromptTokens,
    usageReported: rec.outputTokens !== undefined,
  };
}

/** TPOT = (E2E − TTFT) / (output tokens − 1); undefined for single-token outputs. */
export function tpotOf(t: RequestTiming): number | undefined {
  return t.outputTokens > 1 ? (t.e2e - t.ttft) / (t.outputTokens - 1) : undefined;
}
