import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { SseLineSplitter } from './sse-line-splitter.js';

export interface SsePostOptions {
  body: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Called for each `data:` payload with the arrival time (performance.now ms) of its bytes. */
  onData: (payload: string, arrivedMs: number) => void;
}

export interface SsePostResult {
  status: number;
  /** The response body when the status is not 200 (truncated). */
  errorBody: string;
}

// One keep-alive agent per protocol, unbounded: the benchmark's own semaphore limits concurrency.
const httpAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity, noDelay: true });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: Infinity, noDelay: true });

type Settle = { resolve: (r: SsePostResult) => void; reject: (e: Error) => void };

function readErrorBody(res: http.IncomingMessage, status: number, settle: Settle): void {
  let text = '';
  res.on('data', (c: string) => {
    if (text.length < 2000) text += c;
  });
  res.on('end', () => settle.resolve({ status, errorBody: text.slice(0, 2000) }));
  res.on('error', settle.reject);
}

function readEvents(res: http.IncomingMessage, opts: SsePostOptions, settle: Settle): void {
  const splitter = new SseLineSplitter();
  res.on('data', (chunk: string) => {
    const now = performance.now();
    for (const p of splitter.feed(chunk)) opts.onData(p, now);
  });
  res.on('end', () => {
    const now = performance.now();
    for (const p of splitter.flush()) opts.onData(p, now);
    settle.resolve({ status: 200, errorBody: '' });
  });
  res.on('close', () => {
    if (!res.complete) settle.reject(new Error('connection dropped mid-stream'));
  });
  res.on('error', (e) => settle.reject(new Error(`connection dropped mid-stream (${e.message})`)));
}

/**
 * POSTs JSON and streams the SSE answer. Resolves when the response ends cleanly; rejects
 * when the connection drops mid-stream, times out, or cannot be made.
 */
export function ssePost(url: URL, opts: SsePostOptions): Promise<SsePostResult> {
  const isHttps = url.protocol === 'https:';
  const request = isHttps ? https.request : http.request;
  const headers = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
    'content-length': Buffer.byteLength(opts.body),
    ...opts.headers,
  };
  return new Promise((resolve, reject) => {
    const settle = { resolve, reject };
    const agent = isHttps ? httpsAgent : httpAgent;
    const req = request(url, { method: 'POST', agent, headers }, (res) => {
      res.setEncoding('utf8');
      const status = res.statusCode ?? 0;
      if (status !== 200) readErrorBody(res, status, settle);
      else readEvents(res, opts, settle);
    });
    req.setTimeout(opts.timeoutMs, () =>
      req.destroy(new Error(`timed out after ${opts.timeoutMs} ms`)),
    );
    req.on('error', (e) => reject(e));
    req.end(opts.body);
  });
}
