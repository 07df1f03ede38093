import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Engine } from '../engine/engine-types.js';
import { ConnectionDrain } from './connection-drain.js';
import { ApiError, badRequest, routeNotFound, toApiError, unauthorized } from './errors.js';
import { registerChatCompletions } from './openai/chat-completions.js';
import { registerCompletions } from './openai/completions.js';
import { registerModels } from './openai/models.js';
import { registerTokenize } from './openai/tokenize.js';
import { ConcurrencyLimiter, type ServerContext } from './server-context.js';
import type { ChatRenderer, OutputParsers, ServerTokenizer } from './server-deps.js';
import { ServerMetrics } from './server-metrics.js';
import { DEFAULT_SERVER_OPTIONS, type ServerOptions } from './server-options.js';

export interface CreateServerArgs {
  readonly engine: Engine;
  readonly tokenizer: ServerTokenizer;
  /** The name clients send as `model` (--served-model-name). */
  readonly modelName: string;
  /** null: the model has no chat template, so /v1/chat/completions answers 400. */
  readonly chatTemplate: ChatRenderer | null;
  readonly parsers?: OutputParsers;
  readonly options?: Partial<ServerOptions>;
  /** Drops the engine's prefix cache; enables POST /flush_cache and /reset_prefix_cache. */
  readonly resetPrefixCache?: () => void;
  /** Fastify's request log (pino, JSON lines on stdout). */
  readonly logger?: boolean;
}

/** JSON bodies whatever the content type says, so `curl -d '{...}'` works without -H. */
function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '')
      return done(badRequest('The request body is empty; send a JSON object.'));
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      done(badRequest(`The request body is not valid JSON: ${(e as Error).message}`));
    }
  });
}

/** The cache-flush routes of SGLang and vLLM, which benchmark clients call between runs. */
const ADMIN_ROUTES = ['/flush_cache', '/reset_prefix_cache'];

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Hooks every request: refuse while closing, check the API key on /v1, count it when done. */
function installHooks(
  app: FastifyInstance,
  ctx: ServerContext,
  drain: ConnectionDrain,
  closing: () => boolean,
): void {
  app.addHook('onRequest', async (request, reply) => {
    const endpoint = request.routeOptions.url ?? 'unmatched';
    const socket = request.raw.socket;
    drain.requestStarted(socket);
    reply.raw.once('close', () => {
      // 499 (nginx's "client closed request"): the client went away before the answer ended.
      ctx.metrics.requestDone(endpoint, reply.raw.writableFinished ? reply.raw.statusCode : 499);
      drain.requestEnded(socket);
    });
    if (closing()) {
      reply.header('connection', 'close');
      throw new ApiError(
        503,
        'The server is shutting down.',
        'server_error',
        null,
        'shutting_down',
      );
    }
    const key = ctx.options.apiKey;
    if (key === null || !(request.url.startsWith('/v1/') || ADMIN_ROUTES.includes(request.url)))
      return;
    const auth = request.headers.authorization ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length).trim() : '';
    if (!sameSecret(given, key)) throw unauthorized();
  });
}

function buildContext(args: CreateServerArgs, options: ServerOptions): ServerContext {
  return {
    engine: args.engine,
    tokenizer: args.tokenizer,
    modelName: args.modelName,
    chatTemplate: args.chatTemplate,
    parsers: args.parsers ?? {},
    options,
    metrics: new ServerMetrics(args.engine, options.processMetrics),
    limiter: new ConcurrencyLimiter(options.maxConcurrentRequests),
    validation: {
      vocabSize: args.tokenizer.vocabSize,
      allowRoutedExperts: options.returnRoutedExperts,
    },
    startedAt: Math.floor(Date.now() / 1000),
  };
}

/**
 * The OpenAI-compatible HTTP server over one engine: /v1/chat/completions, /v1/completions,
 * /v1/models, /tokenize, /detokenize, /version, /health, /metrics. Call `listen()` to serve; `close()` stops accepting, lets the
 * requests in flight finish, then resolves (the engine's shutdown is the caller's).
 */
export function createServer(args: CreateServerArgs): FastifyInstance {
  const options: ServerOptions = { ...DEFAULT_SERVER_OPTIONS, ...args.options };
  const app = Fastify({
    logger: args.logger ?? false,
    bodyLimit: options.bodyLimitBytes,
    // We answer 503 ourselves, in the OpenAI error shape.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  });
  const ctx = buildContext(args, options);
  const drain = new ConnectionDrain(app.server);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    drain.drain();
  });
  installJsonParser(app);
  app.setErrorHandler(async (err, _request, reply) => {
    const e = toApiError(err, options.bodyLimitBytes);
    if (e.status >= 500) app.log.error(err);
    return reply.status(e.status).send(e.toBody());
  });
  app.setNotFoundHandler(async (request, reply) => {
    return reply.status(404).send(routeNotFound(request.method, request.url).toBody());
  });
  installHooks(app, ctx, drain, () => closing);
  registerChatCompletions(app, ctx);
  registerCompletions(app, ctx);
  registerModels(app, ctx);
  registerTokenize(app, ctx);
  app.get('/health', async () => ({ status: 'ok' }));
  const reset = args.resetPrefixCache;
  if (reset)
    for (const path of ADMIN_ROUTES)
      app.post(path, async () => {
        reset();
        return { status: 'ok' };
      });
  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await ctx.metrics.render();
    return reply.header('content-type', contentType).send(body);
  });
  return app;
}
