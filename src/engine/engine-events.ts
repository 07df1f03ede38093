import type { FinishEvent, TokenEvent } from './engine-types.js';
import type { SampleResult } from './sampler.js';
import type { StepResult } from './step-runner.js';

export function finishEvent(
  reason: FinishEvent['reason'],
  promptTokens: number,
  completionTokens: number,
  cachedTokens: number,
): FinishEvent {
  return { type: 'finish', reason, promptTokens, completionTokens, cachedTokens };
}

export function tokenEvent(
  r: SampleResult,
  isStop: boolean,
  routedExperts: Record<string, number[]> | undefined,
): TokenEvent {
  return {
    type: 'token',
    tokenId: r.tokenId,
    ...(r.logprob !== undefined ? { logprob: r.logprob, topLogprobs: r.topLogprobs ?? [] } : {}),
    ...(routedExperts ? { routedExperts } : {}),
    ...(isStop ? { isStopToken: true } : {}),
  };
}

/**
 * The routed experts of batch token t: the last input token of the sequence, whose forward
 * produced this output token (so event i carries the routing of position promptLen + i - 1).
 */
export function routedExpertsOf(
  out: StepResult,
  t: number,
  numTokens: number,
): Record<string, number[]> {
  const result: Record<string, number[]> = {};
  for (const [layer, ids] of Object.entries(out.routedExperts ?? {})) {
    const k = ids.length / numTokens;
    result[layer] = Array.from(ids.subarray(t * k, (t + 1) * k));
  }
  return result;
}
