import { postJson, type EndpointOptions } from './openai-json-client.js';

interface TokenizeJson {
  count?: number;
  max_model_len?: number;
}

/**
 * The `max_tokens` an eval request may ask for: the requested value, clamped per request to
 * what the model's context leaves after the prompt (`max_model_len − prompt tokens`, both from
 * the server's vLLM-style `POST /tokenize`, which renders chat bodies exactly as the completion
 * endpoints do). Without the clamp a generous default (`eval stop-rate` asks for 8192) is a 400
 * on every request to a short-context model. The first clamp is reported in one line; a server
 * without `/tokenize` gets the requested value unchanged.
 */
export class ContextBudget {
  private tokenizeWorks = true;
  private reported = false;

  constructor(
    private readonly endpoint: EndpointOptions,
    readonly requested: number,
    private readonly report: (line: string) => void = (line) => console.log(line),
  ) {}

  /** max_tokens for this request body (`{model, messages, tools?}` or `{model, prompt}`). */
  async maxTokens(body: Record<string, unknown>): Promise<number> {
    const t = await this.tokenize(body);
    if (t?.count === undefined || t.max_model_len === undefined) return this.requested;
    const room = t.max_model_len - t.count;
    if (this.requested <= room) return this.requested;
    if (!this.reported) {
      this.reported = true;
      this.report(
        `note: max-tokens ${this.requested} does not fit the model's context (max_model_len ` +
          `${t.max_model_len}, a ${t.count}-token prompt): each request asks for at most ` +
          `max_model_len minus its prompt tokens`,
      );
    }
    return Math.max(1, room);
  }

  private async tokenize(body: Record<string, unknown>): Promise<TokenizeJson | undefined> {
    if (!this.tokenizeWorks) return undefined;
    const keys = ['model', 'messages', 'prompt', 'tools', 'tool_choice', 'chat_template_kwargs'];
    const req = Object.fromEntries(keys.filter((k) => k in body).map((k) => [k, body[k]]));
    try {
      return (await postJson(this.endpoint, '/tokenize', req)) as TokenizeJson;
    } catch (e) {
      // A server without the endpoint (404/405) is asked once; other failures are per request.
      if (/HTTP 40[45]/.test((e as Error).message)) this.tokenizeWorks = false;
      return undefined;
    }
  }
}

/** A fixed max_tokens, or one clamped per request by a {@link ContextBudget}. */
export type MaxTokens = number | ContextBudget;

/** The body with `max_tokens` filled in. */
export async function withMaxTokens(
  m: MaxTokens,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  return { ...body, max_tokens: typeof m === 'number' ? m : await m.maxTokens(body) };
}
