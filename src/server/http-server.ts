import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Engine } from '../engine/engine-types.js';
import type { GrammarService } from '../engine/grammar/grammar-service.js';
import { ConnectionDrain } from './connection-drain.js';
import { SequenceLimiter } from './admission.js';
import { checkApiKey } from './auth.js';
import { ApiError, badRequest, clientErrorHandler, routeNotFound, toApiError } from './errors.js';
import { installGracefulShutdown, type ShutdownState } from './graceful-shutdown.js';
import { checkOrigin } from './origin-check.js';
import { timedServerFactory } from './timeouts.js';
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
  /** Structured outputs (response_format, forced tool calls); absent: those answer 400. */
  readonly grammar?: GrammarService | null;
}

/**
 * JSON bodies only (`application/json`, `application/*+json`): any other content type gets a
 * 415. A browser can send text/plain or form bodies cross-site without a CORS preflight, so
 * parsing those as JSON would let any web page drive the API.
 */
function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (
    _req: unknown,
    body: string | Buffer,
    done: (e: Error | null, v?: unknown) => void,
  ) => {
    const text = String(body);
    if (text.trim() === '')
      return done(badRequest('The request body is empty; send a JSON object.'));
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      done(badRequest(`The request body is not valid JSON: ${(e as Error).message}`));
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser(/^application\/[\w.-]+\+json$/i, { parseAs: 'string' }, parse);
}

/** The cache-flush routes of SGLang and vLLM, which benchmark clients call between runs. */
const ADMIN_ROUTES = ['/flush_cache', '/reset_prefix_cache'];

/** Hooks every request: refuse while closing, check origin and API key, count it when done. */
function installHooks(
  app: FastifyInstance,
  ctx: ServerContext,
  drain: ConnectionDrain,
  state: ShutdownState,
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
    if (state.closing) {
      reply.header('connection', 'close');
      throw new ApiError(
        503,
        'The server is shutting down.',
        'server_error',
        null,
        'shutting_down',
      );
    }
    checkOrigin(request, ctx.options.apiKey, ctx.options.allowedOrigins);
    checkApiKey(request, ctx.options.apiKey);
  });
}

function buildContext(args: CreateServerArgs, options: ServerOptions): ServerContext {
  return {
    engine: args.engine,
    tokenizer: args.tokenizer,
    modelName: args.modelName,
    chatTemplate: args.chatTemplate,
    parsers: args.parsers ?? {},
    grammar: args.grammar ?? null,
    options,
    metrics: new ServerMetrics(args.engine, options.processMetrics),
    limiter: new ConcurrencyLimiter(options.maxConcurrentRequests),
    sequences: new SequenceLimiter(options.maxPendingSeqs),
    validation: {
      vocabSize: args.tokenizer.vocabSize,
      allowRoutedExperts: options.returnRoutedExperts,
      maxStopStringChars: options.maxStopStringChars,
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
  if (options.apiKey !== null && options.apiKey.trim() === '')
    throw new Error('createServer: the API key is empty (pass null for no key)');
  const app = Fastify({
    logger: args.logger ?? false,
    bodyLimit: options.bodyLimitBytes,
    // We answer 503 ourselves, in the OpenAI error shape.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    serverFactory: timedServerFactory(options),
    // Malformed URLs and HTTP parse errors get the OpenAI error shape too.
    frameworkErrors: (err, _request, reply) => {
      const e = toApiError(err, options.bodyLimitBytes);
      void (reply as FastifyReply).status(e.status).send(e.toBody());
    },
    clientErrorHandler: clientErrorHandler,
  });
  const ctx = buildContext(args, options);
  const drain = new ConnectionDrain(app.server);
  const state: ShutdownState = { closing: false };
  installGracefulShutdown(app, state, drain, options.shutdownTimeoutMs);
  installJsonParser(app);
  app.setErrorHandler(async (err, request, reply) => {
    const e = toApiError(err, options.bodyLimitBytes);
    if (e.status >= 500) {
      options.logError(`moeserve: ${request.method} ${request.url} -> ${e.status}: ${e.message}`);
      app.log.error(err);
    }
    return reply.status(e.status).send(e.toBody());
  });
  app.setNotFoundHandler(async (request, reply) => {
    return reply.status(404).send(routeNotFound(request.method, request.url).toBody());
  });
  installHooks(app, ctx, drain, state);
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
