import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { FastifyInstance } from 'fastify';
import { createServer, type CreateServerArgs } from '../../src/server/http-server.js';
import type { ServerOptions } from '../../src/server/server-options.js';
import { FakeEngine, type FakeEngineOptions } from './fake-engine.js';
import { fakeChatTemplate, fakeTokenizer } from './fake-text.js';

export const MODEL = 'moeserve-test';

export interface TestServer {
  app: FastifyInstance;
  engine: FakeEngine;
  url: string;
  port: number;
  client: OpenAI;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  engine?: FakeEngineOptions;
  options?: Partial<ServerOptions>;
  chatTemplate?: CreateServerArgs['chatTemplate'];
  resetPrefixCache?: () => void;
}

/** Starts a real server on a free port over a FakeEngine, with an OpenAI client pointed at it. */
export async function startTestServer(o: TestServerOptions = {}): Promise<TestServer> {
  const engine = new FakeEngine(o.engine);
  const app = createServer({
    engine,
    tokenizer: fakeTokenizer,
    modelName: MODEL,
    chatTemplate: o.chatTemplate === undefined ? fakeChatTemplate : o.chatTemplate,
    options: { processMetrics: false, ...o.options },
    ...(o.resetPrefixCache && { resetPrefixCache: o.resetPrefixCache }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const apiKey = o.options?.apiKey ?? 'unused';
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 20_000 });
  return {
    app,
    engine,
    url,
    port,
    client,
    post: (path, body, headers = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    close: () => app.close(),
  };
}

/** Resolves once `cond()` holds (polling), or rejects after `ms`. */
export async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('waitFor timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
