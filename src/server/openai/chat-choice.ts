import { randomUUID } from 'node:crypto';
import type { TokenEvent } from '../../engine/engine-types.js';
import type { ChoiceFinishReason } from '../run-choice.js';
import type {
  ReasoningParser,
  ServerTokenizer,
  ToolCallDelta,
  ToolCallParser,
} from '../server-deps.js';
import { appendRoutedExperts, chatLogprobs } from './token-details.js';
import type {
  ChatChoice,
  ChatChunkChoice,
  ChatDelta,
  ChatLogprob,
  FinishReason,
  RoutedExperts,
  ToolCall,
  ToolCallChunk,
} from './types.js';

export interface ChatChoiceOptions {
  readonly index: number;
  readonly reasoning: ReasoningParser | null;
  readonly toolCall: ToolCallParser | null;
  readonly logprobs: number | null;
  readonly routedExperts: boolean;
  readonly tokenizer: ServerTokenizer;
  /** Text the server appended to the prompt, parsed as the start of the output. */
  readonly prefill: string;
}

interface Parts {
  reasoning: string;
  content: string;
  calls: ToolCallDelta[];
}

export function newToolCallId(): string {
  return `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
}

/**
 * One chat choice: runs its text through the reasoning and tool-call parsers, builds the
 * streaming delta for each step and keeps the totals for the final message (and for deciding
 * finish_reason "tool_calls", as OpenAI reports it when calls were produced).
 */
export class ChatChoiceBuilder {
  private content = '';
  private reasoning = '';
  private readonly calls: ToolCall[] = [];
  private readonly logprobList: ChatLogprob[] = [];
  private readonly routed: RoutedExperts = {};
  private reason: ChoiceFinishReason = 'abort';

  constructor(private readonly o: ChatChoiceOptions) {}

  /** The chunk choice for the prefill (e.g. a forced call's name), or null when none. */
  start(): ChatChunkChoice | null {
    return this.o.prefill ? this.delta(this.o.prefill, []) : null;
  }

  /** The chunk choice for newly generated text, or null when there is nothing to send. */
  delta(text: string, tokens: readonly TokenEvent[]): ChatChunkChoice | null {
    return this.chunk(this.parse(text, false), tokens);
  }

  /** The chunk choices that end the stream: parser leftovers, then the finish_reason. */
  finish(reason: ChoiceFinishReason): ChatChunkChoice[] {
    this.reason = reason;
    const tail = this.chunk(this.parse('', true), []);
    const end: ChatChunkChoice = {
      index: this.o.index,
      delta: {},
      logprobs: null,
      finish_reason: this.finishReason(reason),
    };
    return tail ? [tail, end] : [end];
  }

  /** The non-streaming choice; call after finish(). */
  message(): ChatChoice {
    const reason = this.reason;
    const hasCalls = this.calls.length > 0;
    const choice: ChatChoice = {
      index: this.o.index,
      message: {
        role: 'assistant',
        content: this.content === '' && hasCalls ? null : this.content,
      },
      logprobs: this.o.logprobs === null ? null : { content: this.logprobList },
      finish_reason: this.finishReason(reason),
    };
    if (this.o.reasoning) choice.message.reasoning_content = this.reasoning || null;
    if (hasCalls) choice.message.tool_calls = this.calls.filter((c) => c !== undefined);
    if (this.o.routedExperts) choice.routed_experts = this.routed;
    return choice;
  }

  /** The finish_reason reported for an engine reason: "tool_calls" when calls came out. */
  finishReason(reason: ChoiceFinishReason): FinishReason {
    return reason === 'stop' && this.calls.length > 0 ? 'tool_calls' : reason;
  }

  private parse(text: string, end: boolean): Parts {
    let reasoning = '';
    let content = text;
    const rp = this.o.reasoning;
    if (rp) {
      const a = text ? rp.feed(text) : { reasoning: '', content: '' };
      const b = end ? rp.finish() : { reasoning: '', content: '' };
      reasoning = a.reasoning + b.reasoning;
      content = a.content + b.content;
    }
    const tp = this.o.toolCall;
    if (!tp) return { reasoning, content, calls: [] };
    const a = content ? tp.feed(content) : { content: '', calls: [] };
    const b = end ? tp.finish() : { content: '', calls: [] };
    return { reasoning, content: a.content + b.content, calls: [...a.calls, ...b.calls] };
  }

  private chunk(parts: Parts, tokens: readonly TokenEvent[]): ChatChunkChoice | null {
    const delta: ChatDelta = {};
    if (parts.reasoning) {
      delta.reasoning_content = parts.reasoning;
      this.reasoning += parts.reasoning;
    }
    if (parts.content) {
      delta.content = parts.content;
      this.content += parts.content;
    }
    if (parts.calls.length > 0) delta.tool_calls = parts.calls.map((c) => this.toolCallChunk(c));
    const logprobs =
      this.o.logprobs !== null && tokens.length > 0
        ? chatLogprobs(this.o.tokenizer, tokens, this.o.logprobs)
        : null;
    if (logprobs) this.logprobList.push(...logprobs);
    const routed: RoutedExperts = {};
    if (this.o.routedExperts) {
      appendRoutedExperts(routed, tokens);
      appendRoutedExperts(this.routed, tokens);
    }
    const hasRouted = Object.keys(routed).length > 0;
    if (Object.keys(delta).length === 0 && !logprobs && !hasRouted) return null;
    const choice: ChatChunkChoice = {
      index: this.o.index,
      delta,
      logprobs: logprobs ? { content: logprobs } : null,
      finish_reason: null,
    };
    if (hasRouted) choice.routed_experts = routed;
    return choice;
  }

  private toolCallChunk(d: ToolCallDelta): ToolCallChunk {
    const existing = this.calls[d.index];
    if (existing) {
      existing.function.arguments += d.arguments ?? '';
      if (d.name) existing.function.name += d.name;
      const fn: ToolCallChunk['function'] = { arguments: d.arguments ?? '' };
      if (d.name) fn.name = d.name;
      return { index: d.index, function: fn };
    }
    const call: ToolCall = {
      id: d.id ?? newToolCallId(),
      type: 'function',
      function: { name: d.name ?? '', arguments: d.arguments ?? '' },
    };
    this.calls[d.index] = call;
    return { index: d.index, id: call.id, type: 'function', function: { ...call.function } };
  }
}
