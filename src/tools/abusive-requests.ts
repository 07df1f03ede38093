import { connect } from 'node:net';

/** What an abusive request needs to know about the server under test. */
export interface AbuseTarget {
  readonly url: string;
  readonly model: string;
  readonly apiKey?: string;
}

export interface AbuseResult {
  readonly kind: string;
  /** The HTTP status, or what happened to the connection ("closed", "dropped"). */
  readonly status: string;
  /** The statuses this kind must get; anything else is a failure of the server. */
  readonly expected: readonly string[];
}

const KINDS = [
  'too-many-choices',
  'huge-prompt',
  'text-plain',
  'bad-json',
  'bad-url',
  'no-key',
  'adversarial-stops',
  'never-reads',
  'slow-body',
] as const;

function json(t: AbuseTarget, body: unknown, extra: Record<string, string> = {}): RequestInit {
  const auth: Record<string, string> = t.apiKey ? { authorization: `Bearer ${t.apiKey}` } : {};
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth, ...extra },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

async function status(p: Promise<Response>): Promise<string> {
  try {
    const r = await p;
    await r.arrayBuffer();
    return String(r.status);
  } catch {
    return 'dropped';
  }
}

/** A raw connection that sends `head` and then behaves badly for `ms`, then hangs up. */
function rawClient(t: AbuseTarget, head: string, ms: number, pause: boolean): Promise<string> {
  const u = new URL(t.url);
  return new Promise((resolve) => {
    const sock = connect(Number(u.port), u.hostname);
    let closedByServer = false;
    sock.on('error', () => {});
    sock.on('close', () => (closedByServer = true));
    if (pause) sock.pause();
    else sock.resume();
    sock.write(head);
    setTimeout(() => {
      sock.destroy();
      resolve(closedByServer ? 'closed' : 'hung-up');
    }, ms);
  });
}

type Case = (t: AbuseTarget) => Promise<Omit<AbuseResult, 'kind'>>;

const post = (t: AbuseTarget, body: unknown, extra: Record<string, string> = {}) =>
  status(fetch(`${t.url}/v1/completions`, json(t, body, extra)));

function rawHead(t: AbuseTarget, body: string, length = Buffer.byteLength(body)): string {
  const auth = t.apiKey ? `Authorization: Bearer ${t.apiKey}\r\n` : '';
  return (
    `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `${auth}Content-Length: ${length}\r\n\r\n${body}`
  );
}

const CASES: Record<(typeof KINDS)[number], Case> = {
  'too-many-choices': async (t) => ({
    expected: ['400'],
    status: await post(t, { model: t.model, prompt: Array(64).fill('x'), n: 128 }),
  }),
  'huge-prompt': async (t) => ({
    expected: ['400', '413'],
    status: await post(t, { model: t.model, prompt: 'w'.repeat(4 * 2 ** 20) }),
  }),
  'text-plain': async (t) => ({
    expected: ['415'],
    status: await post(t, { model: t.model, prompt: 'x' }, { 'content-type': 'text/plain' }),
  }),
  'bad-json': async (t) => ({ expected: ['400'], status: await post(t, '{"model": ') }),
  'bad-url': async (t) => ({
    expected: ['400', '404'],
    status: await status(fetch(`${t.url}/v1/models/%zz`)),
  }),
  // Without a key on the server this is an ordinary request.
  'no-key': async (t) => ({
    expected: t.apiKey ? ['401'] : ['200'],
    status: await status(
      fetch(`${t.url}/%76%31/completions?x`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: t.model, prompt: 'x', max_tokens: 2 }),
      }),
    ),
  }),
  'adversarial-stops': async (t) => {
    const stop = Array.from(
      { length: 64 },
      (_, i) => 'w'.repeat(1000) + String.fromCharCode(65 + i),
    );
    return {
      expected: ['200'],
      status: await post(t, { model: t.model, prompt: 'w w w', max_tokens: 64, stop }),
    };
  },
  'never-reads': async (t) => {
    const body = JSON.stringify({
      model: t.model,
      prompt: 'x',
      n: 4,
      max_tokens: 512,
      stream: true,
    });
    return {
      expected: ['closed', 'hung-up'],
      status: await rawClient(t, rawHead(t, body), 3000, true),
    };
  },
  'slow-body': async (t) => ({
    expected: ['closed', 'hung-up'],
    status: await rawClient(t, rawHead(t, '{"model":', 1000), 1500, false),
  }),
};

/**
 * One request of a kind a careless or hostile client sends: too many choices, a huge
 * prompt, a body that is not JSON, a bypass path without the key, adversarial stop strings,
 * a stream it never reads, a body sent too slowly. The server must answer each with a 4xx
 * (or serve it, for the last three), never a 5xx, and go on serving everyone else.
 */
export async function abusiveRequest(t: AbuseTarget, rand: () => number): Promise<AbuseResult> {
  const kind = KINDS[Math.floor(rand() * KINDS.length)]!;
  return { kind, ...(await CASES[kind](t)) };
}
