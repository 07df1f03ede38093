import type { PromptTokenLogprob, TokenEvent } from '../../engine/engine-types.js';
import type { ServerTokenizer } from '../server-deps.js';
import type {
  ChatLogprob,
  CompletionLogprobs,
  PromptLogprobs,
  RoutedExperts,
  TopLogprob,
} from './types.js';

const utf8 = new TextEncoder();

/** The text of one token on its own, as OpenAI shows it in logprobs (special tokens kept). */
function tokenText(tokenizer: ServerTokenizer, id: number): string {
  return tokenizer.decode([id], { skipSpecialTokens: false });
}

function top(tokenizer: ServerTokenizer, id: number, logprob: number): TopLogprob {
  const token = tokenText(tokenizer, id);
  return { token, logprob, bytes: [...utf8.encode(token)] };
}

/** Chat format: one entry per token with its `top_logprobs` alternatives. */
export function chatLogprobs(
  tokenizer: ServerTokenizer,
  tokens: readonly TokenEvent[],
  numTop: number,
): ChatLogprob[] {
  return tokens.map((t) => ({
    ...top(tokenizer, t.tokenId, t.logprob ?? 0),
    top_logprobs: (t.topLogprobs ?? [])
      .slice(0, numTop)
      .map((a) => top(tokenizer, a.tokenId, a.logprob)),
  }));
}

/** Completions format: parallel arrays; `textOffset` is where the first token starts. */
export function completionLogprobs(
  tokenizer: ServerTokenizer,
  tokens: readonly TokenEvent[],
  numTop: number,
  textOffset: number,
): CompletionLogprobs {
  const out: CompletionLogprobs = {
    tokens: [],
    token_logprobs: [],
    top_logprobs: [],
    text_offset: [],
  };
  let offset = textOffset;
  for (const t of tokens) {
    const text = tokenText(tokenizer, t.tokenId);
    out.tokens.push(text);
    out.token_logprobs.push(t.logprob ?? 0);
    const alts: Record<string, number> = {};
    for (const a of (t.topLogprobs ?? []).slice(0, numTop))
      alts[tokenText(tokenizer, a.tokenId)] = a.logprob;
    out.top_logprobs.push(alts);
    out.text_offset.push(offset);
    offset += text.length;
  }
  return out;
}

/** Appends the tokens' routed experts, one row per token for each MoE layer. */
export function appendRoutedExperts(target: RoutedExperts, tokens: readonly TokenEvent[]): void {
  for (const t of tokens) {
    for (const [layer, ids] of Object.entries(t.routedExperts ?? {})) {
      (target[layer] ??= []).push([...ids]);
    }
  }
}

export function mergeCompletionLogprobs(a: CompletionLogprobs, b: CompletionLogprobs): void {
  a.tokens.push(...b.tokens);
  a.token_logprobs.push(...b.token_logprobs);
  a.top_logprobs.push(...b.top_logprobs);
  a.text_offset.push(...b.text_offset);
}

/** vLLM's `prompt_logprobs`: null for the first token, then the token and its top alternatives. */
export function promptLogprobsOf(
  tokenizer: ServerTokenizer,
  entries: readonly PromptTokenLogprob[],
): PromptLogprobs {
  const out: PromptLogprobs = [null];
  for (const e of entries) {
    const rec: NonNullable<PromptLogprobs[number]> = {};
    e.top.forEach((a, i) => {
      rec[String(a.tokenId)] = {
        logprob: a.logprob,
        rank: i + 1,
        decoded_token: tokenText(tokenizer, a.tokenId),
      };
    });
    rec[String(e.tokenId)] = {
      logprob: e.logprob,
      rank: e.rank,
      decoded_token: tokenText(tokenizer, e.tokenId),
    };
    out.push(rec);
  }
  return out;
}

/** OpenAI `echo` logprobs of the prompt: the first token's logprob and alternatives are null. */
export function echoLogprobs(
  tokenizer: ServerTokenizer,
  promptIds: readonly number[],
  entries: readonly PromptTokenLogprob[],
  numTop: number,
): CompletionLogprobs {
  const out: CompletionLogprobs = {
    tokens: [],
    token_logprobs: [],
    top_logprobs: [],
    text_offset: [],
  };
  let offset = 0;
  promptIds.forEach((id, i) => {
    const text = tokenText(tokenizer, id);
    const e = i === 0 ? undefined : entries[i - 1];
    out.tokens.push(text);
    out.token_logprobs.push(e ? e.logprob : null);
    if (e) {
      const alts: Record<string, number> = {};
      for (const a of e.top.slice(0, numTop)) alts[tokenText(tokenizer, a.tokenId)] = a.logprob;
      out.top_logprobs.push(alts);
    } else out.top_logprobs.push(null);
    out.text_offset.push(offset);
    offset += text.length;
  });
  return out;
}
