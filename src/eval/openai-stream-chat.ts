import { ssePost } from '../bench/sse-post.js';
import type { CompletionResult, EndpointOptions, ToolCall } from './openai-json-client.js';

interface DeltaToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface StreamChunk {
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: DeltaToolCall[] | null;
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/** Accumulates one streamed choice the way an OpenAI client does: tool calls by `index`. */
class StreamedChoice {
  content = '';
  reasoning = '';
  finishReason = 'none';
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  private readonly calls = new Map<number, ToolCall>();

  add(chunk: StreamChunk): void {
    if (chunk.error) throw new Error(`in-stream error: ${chunk.error.message ?? 'unknown'}`);
    if (chunk.usage) {
      this.promptTokens = chunk.usage.prompt_tokens;
      this.completionTokens = chunk.usage.completion_tokens;
    }
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const d = choice.delta ?? {};
    this.content += d.content ?? '';
    this.reasoning += d.reasoning_content ?? d.reasoning ?? '';
    for (const tc of d.tool_calls ?? []) this.addToolDelta(tc);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  private addToolDelta(tc: DeltaToolCall): void {
    const i = tc.index ?? this.calls.size;
    const call = this.calls.get(i) ?? {
      id: '',
      type: 'function' as const,
      function: { name: '', arguments: '' },
    };
    if (tc.id) call.id = tc.id;
    call.function.name += tc.function?.name ?? '';
    call.function.arguments += tc.function?.arguments ?? '';
    this.calls.set(i, call);
  }

  result(): CompletionResult {
    const toolCalls = [...this.calls.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
    return {
      content: this.content,
      reasoning: this.reasoning,
      finishReason: this.finishReason,
      toolCalls,
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      reasoningTokens: undefined,
    };
  }
}

/**
 * A streamed chat completion reassembled into the non-streaming result shape, so evals can
 * run the same checks on what a streaming agent client would see (the argument fragments of
 * each tool call joined in order).
 */
export async function chatCompletionStream(
  ep: EndpointOptions,
  body: Record<string, unknown>,
): Promise<CompletionResult> {
  const choice = new StreamedChoice();
  let failure: Error | null = null;
  const res = await ssePost(new URL(ep.baseUrl.replace(/\/+$/, '') + '/v1/chat/completions'), {
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    ...(ep.headers && { headers: ep.headers }),
    timeoutMs: ep.timeoutMs,
    onData: (payload) => {
      if (payload === '[DONE]' || failure) return;
      try {
        choice.add(JSON.parse(payload) as StreamChunk);
      } catch (e) {
        failure = e as Error;
      }
    },
  });
  if (res.status !== 200)
    throw new Error(`/v1/chat/completions: HTTP ${res.status}: ${res.errorBody.slice(0, 500)}`);
  if (failure) throw failure;
  return choice.result();
}
