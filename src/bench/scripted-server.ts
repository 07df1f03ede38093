import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import {
  completeBody,
  replyPieces,
  toolCallsJson,
  usageOf,
  type Piece,
  type Script,
  type ScriptedReply,
  type ScriptedRequest,
} from './scripted-reply.js';

/**
 * An OpenAI-compatible server whose every answer is scripted: it streams at a known rate,
 * stalls, drops connections, fails and returns chosen finish reasons and tool calls. It is the
 * ground truth for the bench and eval tests and for the client-overhead measurement.
 */
export class ScriptedServer {
  /** Generation requests received, in arrival order (bodies kept only with `keepLog`). */
  readonly requests: ScriptedRequest[] = [];
  /** Server-side span (arrival → end of response) of each finished streamed request, ms. */
  readonly spansMs: number[] = [];
  /** What actually went on the wire per finished stream (with `keepLog`): the tests' truth. */
  readonly timelines: StreamTimeline[] = [];
  private nextIndex = 0;

  private constructor(
    private readonly server: http.Server,
    private readonly script: Script,
    private readonly keepLog: boolean,
  ) {}

  static async start(script: Script, opts: { port?: number; keepLog?: boolean } = {}) {
    const server = http.createServer({ noDelay: true, keepAliveTimeout: 60_000 });
    const s = new ScriptedServer(server, script, opts.keepLog ?? true);
    server.on('request', (req, res) => s.handle(req, res));
    await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
    return s;
  }

  get url(): string {
    const a = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${a.port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const arrival = performance.now();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: 'scripted', object: 'model' }] });
    }
    if (req.method === 'GET' && path === '/scripted/stats') {
      return sendJson(res, 200, { spans_ms: this.spansMs.splice(0) });
    }
    if (req.method === 'POST' && (path === '/flush_cache' || path === '/reset_prefix_cache')) {
      return sendJson(res, 200, {});
    }
    if (req.method !== 'POST' || !path.endsWith('completions')) {
      return sendJson(res, 404, errorBody(`no route ${req.method} ${path}`, 404));
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return sendJson(res, 400, errorBody('request body is not JSON', 400));
      }
      const sreq: ScriptedRequest = { path, body, index: this.nextIndex++ };
      if (this.keepLog) this.requests.push(sreq);
      this.answer(sreq, this.script(sreq), arrival, res);
    });
  }

  private answer(
    req: ScriptedRequest,
    r: ScriptedReply,
    arrival: number,
    res: http.ServerResponse,
  ) {
    if (r.status !== undefined && r.status !== 200) {
      return sendJson(res, r.status, errorBody(`scripted failure ${r.status}`, r.status));
    }
    if (req.body['stream'] !== true) {
      const pieces = replyPieces(r);
      const wait = (r.ttftMs ?? 0) + Math.max(0, pieces.length - 1) * (r.itlMs ?? 0);
      setTimeout(() => sendJson(res, 200, completeBody(r, req)), wait);
      return;
    }
    new ScriptedStream(req, r, arrival, res, (t) => {
      this.spansMs.push(t.endMs - t.arrivalMs);
      if (this.keepLog) this.timelines.push(t);
    }).begin();
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function errorBody(message: string, code: number): unknown {
  return { object: 'error', error: { message, type: 'scripted_error', code } };
}

/** performance.now() times of one stream: arrival, each text chunk written, the end. */
export interface StreamTimeline {
  arrivalMs: number;
  chunkMs: number[];
  endMs: number;
}

/** Streams one scripted reply; chunk k is due at arrival + TTFT + k·ITL (+ stall). */
class ScriptedStream {
  private readonly pieces: Piece[];
  private readonly chat: boolean;
  private readonly chunkMs: number[] = [];
  private k = 0;

  constructor(
    private readonly req: ScriptedRequest,
    private readonly r: ScriptedReply,
    private readonly arrival: number,
    private readonly res: http.ServerResponse,
    private readonly onEnd: (t: StreamTimeline) => void,
  ) {
    this.pieces = replyPieces(r);
    this.chat = req.path.endsWith('/chat/completions');
  }

  begin(): void {
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (this.chat && this.r.roleChunk) this.send({ role: 'assistant', content: '' }, null);
    this.schedule();
  }

  private dueMs(k: number): number {
    const stall = this.r.stallAfterChunks !== undefined && k >= this.r.stallAfterChunks;
    return (
      this.arrival +
      (this.r.ttftMs ?? 0) +
      k * (this.r.itlMs ?? 0) +
      (stall ? (this.r.stallMs ?? 0) : 0)
    );
  }

  private schedule(): void {
    setTimeout(() => this.step(), Math.max(0, this.dueMs(this.k) - performance.now()));
  }

  private step(): void {
    if (this.res.destroyed) return;
    if (this.r.dropAfterChunks === this.k) return void this.res.socket?.destroy();
    if (this.r.errorAfterChunks === this.k) {
      this.write({ error: { message: 'scripted in-stream error', type: 'scripted_error' } });
      return void this.res.end();
    }
    const piece = this.pieces[this.k];
    if (!piece) return this.finish();
    const delta = piece.reasoning ? { reasoning_content: piece.text } : { content: piece.text };
    this.send(this.k === 0 && !this.r.roleChunk ? { role: 'assistant', ...delta } : delta, null);
    this.chunkMs.push(performance.now());
    this.k++;
    // Real servers close the stream right after the last token, not one ITL later.
    if (this.k === this.pieces.length) this.finish();
    else this.schedule();
  }

  private finish(): void {
    if (this.chat && this.r.toolCalls) this.send({ tool_calls: toolCallsJson(this.r) }, null);
    this.send({}, this.r.finishReason ?? (this.r.toolCalls ? 'tool_calls' : 'stop'));
    const opts = this.req.body['stream_options'] as { include_usage?: boolean } | undefined;
    if (opts?.include_usage && !this.r.omitUsage) {
      this.write({
        ...this.envelope(),
        choices: [],
        usage: usageOf(this.r, this.req.body, this.pieces),
      });
    }
    this.res.write('data: [DONE]\n\n');
    this.res.end();
    this.onEnd({ arrivalMs: this.arrival, chunkMs: this.chunkMs, endMs: performance.now() });
  }

  private envelope(): Record<string, unknown> {
    return {
      id: `scripted-${this.req.index}`,
      object: this.chat ? 'chat.completion.chunk' : 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: String(this.req.body['model'] ?? 'scripted'),
    };
  }

  private send(delta: Record<string, unknown>, finish: string | null): void {
    const text = typeof delta['content'] === 'string' ? delta['content'] : '';
    const choice = this.chat
      ? { index: 0, delta, finish_reason: finish }
      : { index: 0, text: text || String(delta['reasoning_content'] ?? ''), finish_reason: finish };
    this.write({ ...this.envelope(), choices: [choice] });
  }

  private write(obj: unknown): void {
    this.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  }
}
