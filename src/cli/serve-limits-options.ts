import { DEFAULT_ENGINE_CONFIG } from '../engine/engine-config.js';
import { resolveApiKey } from '../server/api-key.js';
import { DEFAULT_SERVER_OPTIONS as D, type ServerOptions } from '../server/server-options.js';
import { numberOption, type OptionSpec, UsageError } from './command.js';

const seconds = (ms: number) => String(ms / 1000);

/** `moeserve serve` flags for access control, admission limits and timeouts. */
export const SERVE_LIMITS_OPTIONS: Record<string, OptionSpec> = {
  'api-key': {
    type: 'string',
    description:
      'require "Authorization: Bearer KEY" on every route but /health, /version, /metrics',
    valueName: 'KEY',
  },
  'api-key-file': {
    type: 'string',
    description: 'read the API key from FILE (keeps it out of ps); else $MOESERVE_API_KEY',
    valueName: 'FILE',
  },
  'allowed-origins': {
    type: 'string',
    description: 'Origins a keyless server accepts, comma-separated, or "*" (default: loopback)',
    valueName: 'LIST',
  },
  'max-choices-per-request': {
    type: 'string',
    default: String(D.maxChoicesPerRequest),
    description: 'most choices (prompts × n) in one request',
    valueName: 'N',
  },
  'max-pending-seqs': {
    type: 'string',
    default: String(D.maxPendingSeqs),
    description: 'most sequences (choices) in flight over all requests; more get 429',
    valueName: 'N',
  },
  'max-request-memory-mb': {
    type: 'string',
    default: String(D.maxRequestMemoryBytes / 2 ** 20),
    description: "bound on the memory one request's answer may need; larger requests get 400",
    valueName: 'MIB',
  },
  'max-stop-string-chars': {
    type: 'string',
    default: String(D.maxStopStringChars),
    description: 'longest accepted stop string',
    valueName: 'N',
  },
  'max-request-share': {
    type: 'string',
    default: String(DEFAULT_ENGINE_CONFIG.maxRequestShare),
    description:
      'share of batch slots and KV pages one request (its choices together) may hold while others wait; 1 = off',
    valueName: 'F',
  },
  'allow-special-tokens-in-content': {
    type: 'boolean',
    description: 'read special-token strings in message text as special tokens, not as text',
  },
  'timeout-headers': {
    type: 'string',
    default: seconds(D.headersTimeoutMs),
    description: 'seconds to receive the request headers',
    valueName: 'S',
  },
  'timeout-request': {
    type: 'string',
    default: seconds(D.requestTimeoutMs),
    description: 'seconds to receive the whole request (headers and body)',
    valueName: 'S',
  },
  'timeout-keep-alive': {
    type: 'string',
    default: seconds(D.keepAliveTimeoutMs),
    description: 'seconds an idle keep-alive connection stays open',
    valueName: 'S',
  },
  'timeout-stall': {
    type: 'string',
    default: seconds(D.stallTimeoutMs),
    description: 'seconds a client may stop reading its response before it is closed and aborted',
    valueName: 'S',
  },
  'shutdown-timeout': {
    type: 'string',
    default: seconds(D.shutdownTimeoutMs),
    description: 'seconds SIGTERM waits for requests in flight before cutting them off',
    valueName: 'S',
  },
};

/** --max-request-share, in (0, 1]. */
export function requestShare(values: Record<string, unknown>): number {
  const f = numberOption(values, 'max-request-share', DEFAULT_ENGINE_CONFIG.maxRequestShare);
  if (!(f > 0 && f <= 1)) throw new UsageError('--max-request-share must be in (0, 1]');
  return f;
}

function positive(values: Record<string, unknown>, name: string, fallback: number): number {
  const n = numberOption(values, name, fallback);
  if (!(n > 0)) throw new UsageError(`--${name} must be positive (got "${String(values[name])}")`);
  return n;
}

function positiveInt(values: Record<string, unknown>, name: string, fallback: number): number {
  const n = positive(values, name, fallback);
  if (!Number.isInteger(n)) throw new UsageError(`--${name} must be an integer`);
  return n;
}

const ms = (values: Record<string, unknown>, name: string, fallbackMs: number) =>
  Math.round(positive(values, name, fallbackMs / 1000) * 1000);

/** The server options these flags set (the API key from flag, file or environment). */
export function serveLimits(
  values: Record<string, unknown>,
  envApiKey: string | undefined,
): Partial<ServerOptions> {
  let apiKey: string | null;
  try {
    apiKey = resolveApiKey({
      flag: values['api-key'] as string | undefined,
      file: values['api-key-file'] as string | undefined,
      env: envApiKey,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const origins = values['allowed-origins'] as string | undefined;
  return {
    apiKey,
    allowedOrigins: origins === undefined ? [] : origins.split(',').map((o) => o.trim()),
    maxChoicesPerRequest: positiveInt(values, 'max-choices-per-request', D.maxChoicesPerRequest),
    maxPendingSeqs: positiveInt(values, 'max-pending-seqs', D.maxPendingSeqs),
    maxRequestMemoryBytes:
      positive(values, 'max-request-memory-mb', D.maxRequestMemoryBytes / 2 ** 20) * 2 ** 20,
    maxStopStringChars: positiveInt(values, 'max-stop-string-chars', D.maxStopStringChars),
    headersTimeoutMs: ms(values, 'timeout-headers', D.headersTimeoutMs),
    requestTimeoutMs: ms(values, 'timeout-request', D.requestTimeoutMs),
    keepAliveTimeoutMs: ms(values, 'timeout-keep-alive', D.keepAliveTimeoutMs),
    stallTimeoutMs: ms(values, 'timeout-stall', D.stallTimeoutMs),
    shutdownTimeoutMs: ms(values, 'shutdown-timeout', D.shutdownTimeoutMs),
    allowSpecialTokensInContent: values['allow-special-tokens-in-content'] === true,
  };
}
