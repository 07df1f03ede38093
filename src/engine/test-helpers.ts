import type {
  EngineEvent,
  FinishEvent,
  GenerateRequest,
  SamplingParams,
  TokenEvent,
} from './engine-types.js';
import type { LlmEngine } from './llm-engine.js';
import { Rng } from './rng.js';

/** Shared by the engine tests and the soak script: request builders and stream collection. */

export const GREEDY: SamplingParams = {
  temperature: 0,
  topP: 1,
  topK: -1,
  minP: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  repetitionPenalty: 1,
  seed: null,
};

export function makeRequest(
  id: string,
  promptIds: readonly number[],
  o: Partial<GenerateRequest> = {},
): GenerateRequest {
  return {
    id,
    promptIds,
    sampling: GREEDY,
    maxTokens: 16,
    stopTokenIds: [],
    ignoreEos: false,
    logprobs: null,
    returnRoutedExperts: false,
    ...o,
  };
}

/** `len` token ids in [1, vocab) drawn from `seed` (no EOS 0 inside prompts). */
export function randomPrompt(seed: number, len: number, vocab: number): number[] {
  const r = new Rng(seed);
  return Array.from({ length: len }, () => 1 + Math.floor(r.next() * (vocab - 1)));
}

export interface Collected {
  readonly events: EngineEvent[];
  readonly tokens: number[];
  readonly tokenEvents: TokenEvent[];
  readonly finish: FinishEvent | undefined;
  readonly error: string | undefined;
}

export async function collect(
  engine: LlmEngine,
  req: GenerateRequest,
  signal?: AbortSignal,
  onToken?: (n: number) => void,
): Promise<Collected> {
  const events: EngineEvent[] = [];
  for await (const ev of engine.generate(req, signal)) {
    events.push(ev);
    if (ev.type === 'token') onToken?.(events.length);
  }
  const tokenEvents = events.filter((e): e is TokenEvent => e.type === 'token');
  return {
    events,
    tokens: tokenEvents.map((e) => e.tokenId),
    tokenEvents,
    finish: events.find((e): e is FinishEvent => e.type === 'finish'),
    error: events.find((e) => e.type === 'error')?.message,
  };
}
