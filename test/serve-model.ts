import type { AddressInfo } from 'node:net';
import { createEngineFromModelDir, type EngineFactoryOptions } from '../src/cli/serve-command.js';
import { createServer } from '../src/server/http-server.js';
import { outputParsers } from '../src/server/text-adapters.js';

export interface ServedModel {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * moeserve's real server (engine, tokenizer, template, minimax-m3 parsers) over a checkpoint
 * directory on the CPU, listening on a free loopback port, served as `modelName` ("tiny").
 */
export async function serveModel(
  dir: string,
  o: Partial<EngineFactoryOptions> = {},
  modelName = 'tiny',
): Promise<ServedModel> {
  const serving = await createEngineFromModelDir(dir, { backend: 'cpu', ...o });
  const parsers = outputParsers({ reasoning: 'minimax-m3', toolCall: 'minimax-m3' });
  const app = createServer({
    ...serving,
    parsers,
    modelName,
    options: { processMetrics: false },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      await app.close();
      await serving.engine.shutdown();
      await serving.grammar?.close();
    },
  };
}
