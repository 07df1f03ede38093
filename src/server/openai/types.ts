import type { GrammarSpec } from '../../engine/grammar/grammar-service.js';

/**
 * OpenAI API shapes: the validated request forms the handlers work with, and the response and
 * chunk bodies they send. Extension fields (vLLM/SGLang style) are marked as such.
 */

// ---------------------------------------------------------------- requests (validated)

/** Sampling and stopping fields shared by chat and completions, after validation. */
export interface SamplingRequest {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  repetitionPenalty?: number;
  maxTokens?: number;
  n: number;
  stop: string[];
  stopTokenIds: number[];
  ignoreEos: boolean;
  /** Extension: keep the matched stop string at the end of the text. */
  includeStopStrInOutput: boolean;
  /** Extension: drop special tokens when detokenizing (default true). */
  skipSpecialTokens: boolean;
  stream: boolean;
  includeUsage: boolean;
  /** Extension: per-token routed expert ids (needs the server flag). */
  returnRoutedExperts: boolean;
  /** OpenAI `logit_bias` as [token id, bias] pairs, biases clamped to [-100, 100]. */
  logitBias?: [number, number][];
  /** Extension (vLLM): top alternatives per prompt token in `prompt_logprobs`. */
  promptLogprobs?: number;
  /** `response_format` json_object / json_schema; null for text. */
  responseFormat: GrammarSpec | null;
}

export interface FunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; name: string };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message, normalised for the chat template (content parts joined into a string). */
export interface ChatMessage {
  role: string;
  content: string | null;
  name?: string;
  /** Arguments are parsed JSON objects when they parse, as HF chat templates expect. */
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: unknown } }[];
  tool_call_id?: string;
  reasoning_content?: string;
}

export interface ChatRequest extends SamplingRequest {
  model?: string;
  messages: ChatMessage[];
  /** null: no logprobs; else the number of top logprobs per token (0..20). */
  logprobs: number | null;
  tools: FunctionTool[];
  toolChoice: ToolChoice;
  chatTemplateKwargs: Record<string, unknown>;
  addGenerationPrompt: boolean;
}

/** A prompt is text to tokenize or ready token ids. */
export type PromptInput = { text: string } | { ids: number[] };

export interface CompletionRequest extends SamplingRequest {
  model?: string;
  prompts: PromptInput[];
  logprobs: number | null;
  /** Return the prompt before the completion (with its logprobs when `logprobs` is set). */
  echo: boolean;
}

// ---------------------------------------------------------------- responses

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface ChatLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/** The first prompt token of an echo has no logprob: null in both lists. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

/** Extension (vLLM): per prompt token, token id → its logprob, rank and text; null first. */
export type PromptLogprobs = (Record<
  string,
  { logprob: number; rank: number; decoded_token: string }
> | null)[];

/** Extension: layer index -> one row of expert ids per generated token. */
export type RoutedExperts = Record<string, number[][]>;

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'abort';

export interface ToolCallChunk {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatDelta {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCallChunk[];
}

export interface ChatChunkChoice {
  index: number;
  delta: ChatDelta;
  logprobs: { content: ChatLogprob[] } | null;
  finish_reason: FinishReason | null;
  routed_experts?: RoutedExperts;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChatChunkChoice[];
  usage?: Usage | null;
  /** Extension (vLLM): sent once, in a chunk of its own, when `prompt_logprobs` is set. */
  prompt_logprobs?: PromptLogprobs;
}

export interface ChatChoice {
  index: number;
  message: {
    role: 'assistant';
    content: string | null;
    reasoning_content?: string | null;
    tool_calls?: ToolCall[];
  };
  logprobs: { content: ChatLogprob[] } | null;
  finish_reason: FinishReason;
  routed_experts?: RoutedExperts;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  usage: Usage;
  /** Extension (vLLM): with `prompt_logprobs`. */
  prompt_logprobs?: PromptLogprobs;
}

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: FinishReason | null;
  routed_experts?: RoutedExperts;
  prompt_logprobs?: PromptLogprobs;
}

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: Usage | null;
}
