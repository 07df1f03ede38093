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

/** `done/total` on one self-overwriting stderr line when it is a terminal. */
export function progressTick(label: string, done: number, total: number): void {
  if (!process.stderr.isTTY) return;
  process.stderr.write(`\r${label} ${done}/${total}\x1b[K${done === total ? '\n' : ''}`);
}
