import { readFileSync } from 'node:fs';

/** The environment variable read when neither --api-key nor --api-key-file is given (vLLM: VLLM_API_KEY). */
export const API_KEY_ENV = 'MOESERVE_API_KEY';

export interface ApiKeySources {
  readonly flag?: string | undefined;
  readonly file?: string | undefined;
  /** $MOESERVE_API_KEY as read (src/config/env.ts). */
  readonly env: string | undefined;
}

/**
 * The API key from, in order, --api-key, --api-key-file (its content, trailing newline
 * dropped) and $MOESERVE_API_KEY; null when none is given. A key that is given but empty is
 * an error, never a silently open server. The file keeps the key out of `ps`.
 */
export function resolveApiKey(s: ApiKeySources): string | null {
  if (s.flag !== undefined && s.file !== undefined)
    throw new Error('give either --api-key or --api-key-file, not both');
  let key: string | undefined;
  let from: string;
  if (s.flag !== undefined) {
    key = s.flag;
    from = '--api-key';
  } else if (s.file !== undefined) {
    try {
      key = readFileSync(s.file, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      throw new Error(`--api-key-file: cannot read ${s.file}: ${(e as Error).message}`);
    }
    from = `--api-key-file ${s.file}`;
  } else {
    key = s.env;
    from = `$${API_KEY_ENV}`;
    if (key === undefined) return null;
  }
  if (key.trim() === '') throw new Error(`${from}: the API key is empty`);
  if (/\s/.test(key)) throw new Error(`${from}: the API key contains whitespace`);
  return key;
}
