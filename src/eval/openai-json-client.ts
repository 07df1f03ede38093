/** Non-streaming OpenAI-compatible calls used by the evals. */

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface EndpointOptions {
  baseUrl: string;
  timeoutMs: number;
  headers?: Record<string, string>;
}

/** The parts of one choice the evals score. Reasoning is `reasoning_content` or `reasoning`. */
export interface CompletionResult {
  content: string;
  reasoning: string;
  finishReason: string;
  toolCalls: ToolCall[];
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  reasoningTokens: number | undefined;
}

interface ChoiceJson {
  text?: string;
  message?: {
    content?: string | null;
    reasoning_content?: string | null;
    reasoning?: string | null;
    tool_calls?: ToolCall[] | null;
  };
  finish_reason?: string | null;
}

interface ResponseJson {
  choices?: ChoiceJson[];
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    completion_tokens_details?: { reasoning_tokens?: number } | null;
  };
}

export async function postJson(ep: EndpointOptions, path: string, body: unknown): Promise<unknown> {
  const url = ep.baseUrl.replace(/\/+$/, '') + path;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ep.headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ep.timeoutMs),
    });
  } catch (e) {
    const err = e as Error;
    throw new Error(`${path}: ${(err.cause as Error | undefined)?.message ?? err.message}`);
  }
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as unknown;
}

function toResult(json: ResponseJson): CompletionResult {
  const choice = json.choices?.[0];
  if (!choice) throw new Error('response has no choices');
  const m = choice.message;
  return {
    content: choice.text ?? m?.content ?? '',
    reasoning: m?.reasoning_content ?? m?.reasoning ?? '',
    finishReason: choice.finish_reason ?? 'none',
    toolCalls: m?.tool_calls ?? [],
    promptTokens: json.usage?.prompt_tokens,
    completionTokens: json.usage?.completion_tokens,
    reasoningTokens: json.usage?.completion_tokens_details?.reasoning_tokens,
  };
}

export async function chatCompletion(
  ep: EndpointOptions,
  body: Record<string, unknown>,
): Promise<CompletionResult> {
  return toResult((await postJson(ep, '/v1/chat/completions', body)) as ResponseJson);
}

export async function textCompletion(
  ep: EndpointOptions,
  body: Record<string, unknown>,
): Promise<CompletionResult> {
  return toResult((await postJson(ep, '/v1/completions', body)) as ResponseJson);
}
