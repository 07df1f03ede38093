import { firstModelId } from '../bench/server-probe.js';
import type { EndpointOptions } from '../eval/openai-json-client.js';
import { numberOption, type OptionSpec } from './command.js';

type Values = Record<string, unknown>;

/** Flags every eval shares. */
export const ENDPOINT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  'base-url': {
    type: 'string',
    default: 'http://127.0.0.1:8000',
    description: 'server URL',
    valueName: 'URL',
  },
  model: { type: 'string', description: 'model name; default: the first id of GET /v1/models' },
  'api-key': { type: 'string', description: 'sent as Authorization: Bearer', valueName: 'KEY' },
  'request-timeout': {
    type: 'string',
    default: '1800',
    description: 'seconds per request',
    valueName: 'S',
  },
};

export function endpointOf(values: Values): EndpointOptions {
  const key = values['api-key'];
  return {
    baseUrl: String(values['base-url']),
    timeoutMs: numberOption(values, 'request-timeout', 1800) * 1000,
    ...(typeof key === 'string' ? { headers: { authorization: `Bearer ${key}` } } : {}),
  };
}

export async function modelOf(values: Values, ep: EndpointOptions): Promise<string> {
  const m = values['model'];
  return typeof m === 'string' ? m : firstModelId(ep.baseUrl, ep.headers);
}

/**
 * `done/total` on stderr: one self-overwriting line on a terminal; when piped, a line of its
 * own at every tenth of the way (and at the end), so logs show progress as it happens.
 */
export function progressTick(
  label: string,
  done: number,
  total: number,
  out: NodeJS.WriteStream = process.stderr,
): void {
  if (out.isTTY) {
    out.write(`\r${label} ${done}/${total}\x1b[K${done === total ? '\n' : ''}`);
    return;
  }
  const step = Math.max(1, Math.ceil(total / 10));
  if (done % step === 0 || done === total) out.write(`${label} ${done}/${total}\n`);
}
