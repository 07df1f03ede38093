import type { FastifyInstance } from 'fastify';
import { modelNotFound } from '../errors.js';
import type { ServerContext } from '../server-context.js';

function modelCard(ctx: ServerContext) {
  return {
    id: ctx.modelName,
    object: 'model' as const,
    created: ctx.startedAt,
    owned_by: 'moeserve',
    root: ctx.modelName,
    parent: null,
    max_model_len: ctx.engine.maxModelLen,
  };
}

/** GET /v1/models and /v1/models/:model (the one served model). */
export function registerModels(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/v1/models', async () => ({ object: 'list', data: [modelCard(ctx)] }));
  // A wildcard, since model names may hold slashes ("MiniMaxAI/MiniMax-M3").
  app.get<{ Params: { '*': string } }>('/v1/models/*', async (request) => {
    // The router has decoded the path once already; decoding again would turn "%25" into a
    // malformed escape (a 500) and let "%2541" alias "A".
    const name = request.params['*'];
    if (name !== ctx.modelName) throw modelNotFound(name);
    return modelCard(ctx);
  });
}
