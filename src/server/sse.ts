import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { ApiError, serverError } from './errors.js';

function frame(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

async function* frames(chunks: AsyncIterable<unknown>): AsyncGenerator<string> {
  try {
    for await (const chunk of chunks) yield frame(chunk);
  } catch (e) {
    // Headers are out already: report the failure in-band, as OpenAI-compatible servers do.
    const err =
      e instanceof ApiError ? e : serverError(`Internal server error: ${(e as Error).message}`);
    yield frame(err.toBody());
  }
  yield 'data: [DONE]\n\n';
}

/**
 * Sends `chunks` as server-sent events (`data: {...}` frames, then `data: [DONE]`). The stream
 * is pulled by the socket, so a slow client slows generation instead of piling up memory.
 */
export function sendSse(reply: FastifyReply, chunks: AsyncIterable<unknown>): FastifyReply {
  reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no');
  return reply.send(Readable.from(frames(chunks)));
}
