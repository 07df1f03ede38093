import { connect, type Socket } from 'node:net';

export interface RawResponse {
  /** Status of the first response on the connection, or null if none came. */
  readonly status: number | null;
  readonly text: string;
  /** The server closed the connection (rather than the wait running out). */
  readonly closed: boolean;
  readonly ms: number;
}

/** Opens a raw TCP connection (for requests that fetch and the SDK refuse to send). */
export function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => resolve(sock));
    sock.once('error', reject);
  });
}

/**
 * Sends `request` as is and collects what comes back until the server closes the connection
 * or `waitMs` passes (then the socket is destroyed).
 */
export async function rawRequest(
  port: number,
  request: string | Buffer,
  waitMs = 3000,
): Promise<RawResponse> {
  const t0 = Date.now();
  const sock = await rawSocket(port);
  return new Promise((resolve) => {
    let text = '';
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : null, text, closed, ms: Date.now() - t0 });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    sock.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      // One complete response with a Content-Length is enough.
      const head = text.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(text.slice(0, head));
      if (head >= 0 && len && text.length >= head + 4 + Number(len[1])) finish(true);
    });
    sock.on('close', () => finish(true));
    sock.on('error', () => finish(true));
    sock.write(request);
  });
}

/** A POST with a JSON body (none if ''), as raw bytes, to an arbitrary request target. */
export function rawPost(
  target: string,
  body: string,
  headers: Record<string, string> = {},
): string {
  const lines = [
    `POST ${target} HTTP/1.1`,
    'Host: 127.0.0.1',
    ...(body === '' ? [] : ['Content-Type: application/json']),
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** The JSON body of a raw response (after the headers), or null. */
export function rawJson(r: RawResponse): unknown {
  const head = r.text.indexOf('\r\n\r\n');
  if (head < 0) return null;
  try {
    return JSON.parse(r.text.slice(head + 4));
  } catch {
    return null;
  }
}
