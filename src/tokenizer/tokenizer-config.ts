import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { AddedToken } from './added-tokens.js';

/** A chat template as tokenizer_config.json stores it: one string or a list of named ones. */
export type ChatTemplateSource = string | readonly { name: string; template: string }[];

/** The parts of tokenizer_config.json (and chat_template.jinja) the engine uses. */
export interface TokenizerConfig {
  bosToken?: string;
  eosToken?: string;
  /** `chat_template.jinja` when present, else `chat_template` from tokenizer_config.json. */
  chatTemplate?: ChatTemplateSource;
  /** `added_tokens_decoder` entries (may name tokens tokenizer.json lacks). */
  addedTokens: AddedToken[];
}

type TokenName = string | { content?: string } | null | undefined;

/** Reads tokenizer_config.json and chat_template.jinja from a model directory; both optional. */
export function readTokenizerConfig(modelDir: string): TokenizerConfig {
  const path = join(modelDir, 'tokenizer_config.json');
  const raw = existsSync(path)
    ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>)
    : {};
  const jinjaPath = join(modelDir, 'chat_template.jinja');
  const chatTemplate = existsSync(jinjaPath)
    ? readFileSync(jinjaPath, 'utf8')
    : (raw['chat_template'] as ChatTemplateSource | undefined);
  const decoder = (raw['added_tokens_decoder'] ?? {}) as Record<
    string,
    {
      content: string;
      special?: boolean;
      lstrip?: boolean;
      rstrip?: boolean;
      single_word?: boolean;
    }
  >;
  const addedTokens = Object.entries(decoder).map(([id, t]) => ({
    id: Number(id),
    content: t.content,
    special: t.special ?? false,
    lstrip: t.lstrip ?? false,
    rstrip: t.rstrip ?? false,
    singleWord: t.single_word ?? false,
  }));
  const config: TokenizerConfig = { addedTokens };
  const bos = tokenName(raw['bos_token'] as TokenName);
  const eos = tokenName(raw['eos_token'] as TokenName);
  if (bos !== undefined) config.bosToken = bos;
  if (eos !== undefined) config.eosToken = eos;
  if (chatTemplate !== undefined) config.chatTemplate = chatTemplate;
  return config;
}

function tokenName(t: TokenName): string | undefined {
  if (typeof t === 'string') return t;
  return t?.content ?? undefined;
}
