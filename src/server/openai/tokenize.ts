import type { FastifyInstance } from 'fastify';
import { createRequire } from 'node:module';
import { badRequest } from '../errors.js';
import { checkModel, checkTextLength, encodeText } from '../generation.js';
import type { ServerContext } from '../server-context.js';
import { buildChatPrompt } from './chat-prompt.js';
import { FieldReader, isObject } from './field-reader.js';
import { validateChatRequest } from './validate.js';

const VERSION = (createRequire(import.meta.url)('../../../package.json') as { version: string })
  .version;

/** The token ids of a /tokenize body: a completion `prompt`, or chat `messages` through the template. */
async function tokenizeBody(ctx: ServerContext, body: Record<string, unknown>): Promise<number[]> {
  const r = new FieldReader(body);
  checkModel(ctx, r.string('model'));
  if (body['messages'] !== undefined)
    return (await buildChatPrompt(ctx, validateChatRequest(body, ctx.validation))).ids;
  const prompt = r.string('prompt');
  if (prompt === undefined)
    throw badRequest('Either prompt (a string) or messages is required.', 'prompt');
  checkTextLength(ctx, prompt, 'prompt');
  return encodeText(ctx, prompt, {
    addSpecialTokens: r.boolean('add_special_tokens') ?? true,
  });
}

/**
 * vLLM's tokenizer endpoints (its bench client realigns random prompts through /tokenize):
 * POST /tokenize {prompt | messages} → {tokens, count, max_model_len}; POST /detokenize
 * {tokens} → {prompt}; GET /version. Chat input is rendered exactly as /v1/chat/completions
 * renders it, so `count` is the prompt_tokens that request would report.
 */
export function registerTokenize(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/tokenize', async (request) => {
    if (!isObject(request.body)) throw badRequest('The request body must be a JSON object.');
    const tokens = await tokenizeBody(ctx, request.body);
    return { tokens, count: tokens.length, max_model_len: ctx.engine.maxModelLen };
  });
  app.post('/detokenize', async (request) => {
    if (!isObject(request.body)) throw badRequest('The request body must be a JSON object.');
    const r = new FieldReader(request.body);
    checkModel(ctx, r.string('model'));
    const tokens = r.array('tokens');
    if (tokens === undefined)
      throw badRequest('tokens (a list of token ids) is required.', 'tokens');
    const vocab = ctx.tokenizer.vocabSize;
    tokens.forEach((t, i) => {
      if (!Number.isInteger(t) || (t as number) < 0 || (t as number) >= vocab)
        throw badRequest(
          `tokens[${i}] must be a token id in [0, ${vocab}), got ${JSON.stringify(t)}`,
          `tokens[${i}]`,
        );
    });
    return { prompt: ctx.tokenizer.decode(tokens as number[], { skipSpecialTokens: false }) };
  });
  app.get('/version', async () => ({ version: VERSION }));
}
