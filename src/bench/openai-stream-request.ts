import { performance } from 'node:perf_hooks';
import { ssePost } from './sse-post.js';

/** `openai` talks to /v1/completions, `openai-chat` to /v1/chat/completions. */
export type Backend = 'openai' | 'openai-chat';

export interface StreamRequestSpec {
  baseUrl: string;
  backend: Backend;
  model: string;
  prompt: string;
  maxTokens: number;
  temperature: number;
  ignoreEos: boolean;
  timeoutMs: number;
  extraBody?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/**
 * Raw observations of one streamed request. All times are performance.now() milliseconds;
 * TTFT/ITL/E2E are derived later so that either convention can be applied to the same run.
 */
export interface StreamRecord {
  success: boolean;
  error: string;
  startMs: number;
  /** Arrival of every chunk with a non-empty `choices` array (vLLM's qualifying chunks). */
  choiceTimes: number[];
  /** Arrival of every chunk carrying non-empty text, content or reasoning (SGLang's). */
  textTimes: number[];
  /** Arrival of the last SSE line, `[DONE]` included. */
  lastLineMs: number;
  promptTokens: number | undefined;
  outputTokens: number | undefined;
  finishReason: string | undefined;
  text: string;
}

export function endpointPath(backend: Backend): string {
  return backend === 'openai' ? '/v1/completions' : '/v1/chat/completions';
}

export function requestBody(spec: StreamRequestSpec): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: spec.model,
    max_tokens: spec.maxTokens,
    temperature: spec.temperature,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (spec.backend === 'openai') body['prompt'] = spec.prompt;
  else body['messages'] = [{ role: 'user', content: spec.prompt }];
  if (spec.ignoreEos) body['ignore_eos'] = true;
  return { ...body, ...spec.extraBody };
}

interface ChunkChoice {
  text?: string | null;
  delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null };
  finish_reason?: string | null;
}

interface StreamChunk {
  choices?: ChunkChoice[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: unknown;
  object?: string;
  message?: string;
}

function chunkText(choice: ChunkChoice): string {
  if (choice.text) return choice.text;
  const d = choice.delta;
  if (!d) return '';
  return (d.reasoning_content ?? d.reasoning ?? '') + (d.content ?? '');
}

function applyChunk(rec: StreamRecord, payload: string, t: number): boolean {
  rec.lastLineMs = t;
  if (payload === '[DONE]') return true;
  const chunk = JSON.parse(payload) as StreamChunk;
  if (chunk.error !== undefined || chunk.object === 'error') {
    throw new Error(`server error in stream: ${JSON.stringify(chunk.error ?? chunk.message)}`);
  }
  const choice = chunk.choices?.[0];
  if (choice) {
    rec.choiceTimes.push(t);
    const text = chunkText(choice);
    if (text.length > 0) {
      rec.textTimes.push(t);
      rec.text += text;
    }
    if (choice.finish_reason) rec.finishReason = choice.finish_reason;
  }
  if (chunk.usage) {
    rec.promptTokens = chunk.usage.prompt_tokens ?? rec.promptTokens;
    rec.outputTokens = chunk.usage.completion_tokens ?? rec.outputTokens;
  }
  return false;
}

/** Sends one streaming request; never throws, failures are recorded in the result. */
export async function streamRequest(spec: StreamRequestSpec): Promise<StreamRecord> {
  const rec: StreamRecord = {
    success: false,
    error: '',
    startMs: performance.now(),
    choiceTimes: [],
    textTimes: [],
    lastLineMs: 0,
    promptTokens: undefined,
    outputTokens: undefined,
    finishReason: undefined,
    text: '',
  };
  let done = false;
  try {
    const url = new URL(spec.baseUrl.replace(/\/+$/, '') + endpointPath(spec.backend));
    const res = await ssePost(url, {
      body: JSON.stringify(requestBody(spec)),
      timeoutMs: spec.timeoutMs,
      ...(spec.headers ? { headers: spec.headers } : {}),
      onData: (payload, t) => {
        if (rec.error !== '') return;
        try {
          if (applyChunk(rec, payload, t)) done = true;
        } catch (e) {
          rec.error = (e as Error).message;
        }
      },
    });
    if (res.status !== 200) rec.error = `HTTP ${res.status}: ${res.errorBody.trim()}`;
    else if (rec.error !== '') return rec;
    else if (!done && rec.finishReason === undefined) rec.error = 'stream ended before [DONE]';
    else rec.success = true;
  } catch (e) {
    rec.error = (e as Error).message || String(e);
  }
  return rec;
}
