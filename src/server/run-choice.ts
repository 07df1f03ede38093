import type {
  Engine,
  GenerateRequest,
  PromptTokenLogprob,
  TokenEvent,
} from '../engine/engine-types.js';
import type { ServerTokenizer } from './server-deps.js';
import { StopStringMatcher } from './stop-string-matcher.js';

/** Engine finish reasons, plus "stop" when the server matched a stop string. */
export type ChoiceFinishReason = 'stop' | 'length' | 'abort';

export type ChoiceEvent =
  /** `text` is what may be shown now; `tokens` the engine tokens consumed for it. */
  | { type: 'delta'; text: string; tokens: TokenEvent[] }
  | {
      type: 'finish';
      reason: ChoiceFinishReason;
      completionTokens: number;
      cachedTokens: number;
    }
  | { type: 'error'; message: string }
  /** The prompt's logprobs (when asked for), before any delta. */
  | { type: 'prompt_logprobs'; logprobs: readonly PromptTokenLogprob[] };

export interface ChoiceSpec {
  readonly request: GenerateRequest;
  readonly stop: readonly string[];
  readonly includeStopStr: boolean;
  readonly skipSpecialTokens: boolean;
  /** Frees per-choice resources (a grammar matcher) once the choice is over. */
  readonly release?: () => void;
}

function linkAbort(parent: AbortSignal | undefined, child: AbortController): () => void {
  if (!parent) return () => {};
  if (parent.aborted) {
    child.abort(parent.reason);
    return () => {};
  }
  const onAbort = () => child.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return () => parent.removeEventListener('abort', onAbort);
}

/**
 * Runs one engine request and turns its token stream into text: incremental detokenizing, stop
 * strings (on a match the text is cut before it, the engine request is aborted and the choice
 * finishes with "stop"), and completion-token counting up to that point. Never throws: engine
 * failures become an `error` event. Leaving the loop early aborts the engine request.
 */
export async function* runChoice(
  engine: Engine,
  tokenizer: ServerTokenizer,
  spec: ChoiceSpec,
  signal?: AbortSignal,
): AsyncGenerator<ChoiceEvent> {
  const ac = new AbortController();
  const unlink = linkAbort(signal, ac);
  const decoder = tokenizer.createDecoder({ skipSpecialTokens: spec.skipSpecialTokens });
  const matcher = new StopStringMatcher(spec.stop, spec.includeStopStr);
  let consumed = 0;
  let done = false;
  try {
    for await (const ev of engine.generate(spec.request, ac.signal)) {
      if (ev.type === 'error') {
        done = true;
        yield { type: 'error', message: ev.message };
        return;
      }
      if (ev.type === 'finish') {
        done = true;
        const tail = matcher.stopped === null ? matcher.push(decoder.flush()) : '';
        const rest = tail + (matcher.stopped === null ? matcher.flush() : '');
        if (rest) yield { type: 'delta', text: rest, tokens: [] };
        const reason = matcher.stopped !== null ? 'stop' : ev.reason;
        yield {
          type: 'finish',
          reason,
          completionTokens: consumed,
          cachedTokens: ev.cachedTokens,
        };
        return;
      }
      if (ev.type === 'prompt_logprobs') {
        yield ev;
        continue;
      }
      // Tokens the engine emits after a stop-string abort are not part of the answer.
      if (matcher.stopped !== null) continue;
      consumed++;
      const text = ev.isStopToken ? '' : matcher.push(decoder.feed([ev.tokenId]));
      if (matcher.stopped !== null) ac.abort(new Error('stop string matched'));
      yield { type: 'delta', text, tokens: [ev] };
    }
    if (!done) {
      done = true;
      yield { type: 'error', message: 'the engine ended the request without a finish event' };
    }
  } catch (e) {
    if (!done) yield { type: 'error', message: `engine error: ${(e as Error).message}` };
  } finally {
    spec.release?.();
    unlink();
    if (!done) ac.abort(new Error('consumer went away'));
  }
}
