/** One benchmark request before it is sent. */
export interface BenchRequest {
  prompt: string;
  /** Client-side estimate of prompt tokens; the server's `usage.prompt_tokens` wins. */
  promptLen: number;
  /** max_tokens to ask for. */
  outputLen: number;
}

/** Rough token count (≈4 characters per token) used only where the server reports nothing. */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.round(text.length / 4));
}
