/** What the scripted OpenAI-compatible server does for one request. Times are milliseconds. */
export interface ScriptedReply {
  /** Non-200 status: answered at once with an OpenAI error body. */
  status?: number;
  /** From request arrival to the first text chunk. */
  ttftMs?: number;
  /** Between consecutive text chunks. */
  itlMs?: number;
  /** Text pieces, one per chunk; default `numTokens` pieces of " tok". */
  content?: string[];
  numTokens?: number;
  /** Reasoning pieces, streamed (as `reasoning_content`) before the content. */
  reasoning?: string[];
  /** Tokens each chunk carries in `usage` (spec decoding, stream intervals); default 1. */
  tokensPerChunk?: number;
  /** Chat only: send a role-only delta right away, before the first text (vLLM TTFT trap). */
  roleChunk?: boolean;
  finishReason?: string;
  toolCalls?: { name: string; arguments: string }[];
  /** After this many text chunks, pause `stallMs` before the next. */
  stallAfterChunks?: number;
  stallMs?: number;
  /** Destroy the socket after this many text chunks. */
  dropAfterChunks?: number;
  /** Send an in-stream `{"error": ...}` after this many text chunks and end. */
  errorAfterChunks?: number;
  promptTokens?: number;
  omitUsage?: boolean;
}

export interface ScriptedRequest {
  path: string;
  body: Record<string, unknown>;
  /** 0-based arrival order of generation requests. */
  index: number;
}

export type Script = (req: ScriptedRequest) => ScriptedReply;

/** The text and reasoning pieces of a reply, in send order. */
export interface Piece {
  text: string;
  reasoning: boolean;
}

export function replyPieces(r: ScriptedReply): Piece[] {
  const reasoning = (r.reasoning ?? []).map((text) => ({ text, reasoning: true }));
  const content = r.content ?? Array.from({ length: r.numTokens ?? 8 }, () => ' tok');
  return [...reasoning, ...content.map((text) => ({ text, reasoning: false }))];
}

/** Whitespace-separated words of the prompt or of all message contents. */
export function countPromptWords(body: Record<string, unknown>): number {
  const texts: string[] = [];
  if (typeof body['prompt'] === 'string') texts.push(body['prompt']);
  if (Array.isArray(body['messages'])) {
    for (const m of body['messages'] as { content?: unknown }[])
      if (typeof m.content === 'string') texts.push(m.content);
  }
  let n = 0;
  for (const t of texts) n += t.split(/\s+/).filter((w) => w !== '').length;
  return n;
}

export function completionTokens(r: ScriptedReply, pieces: readonly Piece[]): number {
  return pieces.length * (r.tokensPerChunk ?? 1) + (r.toolCalls?.length ?? 0);
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usageOf(r: ScriptedReply, body: Record<string, unknown>, pieces: Piece[]): Usage {
  const p = r.promptTokens ?? countPromptWords(body);
  const c = completionTokens(r, pieces);
  return { prompt_tokens: p, completion_tokens: c, total_tokens: p + c };
}

export function toolCallsJson(r: ScriptedReply): unknown[] | undefined {
  return r.toolCalls?.map((tc, i) => ({
    index: i,
    id: `call_${i}`,
    type: 'function',
    function: { name: tc.name, arguments: tc.arguments },
  }));
}

/** The non-streaming answer body. */
export function completeBody(r: ScriptedReply, req: ScriptedRequest): Record<string, unknown> {
  const pieces = replyPieces(r);
  const content = pieces
    .filter((p) => !p.reasoning)
    .map((p) => p.text)
    .join('');
  const reasoning = pieces
    .filter((p) => p.reasoning)
    .map((p) => p.text)
    .join('');
  const finish = r.finishReason ?? (r.toolCalls ? 'tool_calls' : 'stop');
  const chat = req.path.endsWith('/chat/completions');
  const choice = chat
    ? {
        index: 0,
        message: {
          role: 'assistant',
          content,
          ...(reasoning ? { reasoning_content: reasoning } : {}),
          ...(r.toolCalls ? { tool_calls: toolCallsJson(r) } : {}),
        },
        finish_reason: finish,
      }
    : { index: 0, text: content, finish_reason: finish };
  return {
    id: `scripted-${req.index}`,
    object: chat ? 'chat.completion' : 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: String(req.body['model'] ?? 'scripted'),
    choices: [choice],
    usage: usageOf(r, req.body, pieces),
  };
}
