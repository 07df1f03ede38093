import { readFileSync } from 'node:fs';
import { estimateTokens, type BenchRequest } from './bench-dataset.js';
import type { SeededRng } from './seeded-rng.js';

interface Turn {
  from?: string;
  role?: string;
  value?: string;
  content?: string;
}

interface Conversation {
  conversations?: Turn[];
  messages?: Turn[];
}

export interface ShareGptOptions {
  numPrompts: number;
  /** Fixed max_tokens; otherwise the estimated length of the reference reply. */
  fixedOutputLen?: number;
}

/** Reads a ShareGPT JSON array (or JSONL) of `conversations`/`messages`. */
export function loadConversations(path: string): Conversation[] {
  const text = readFileSync(path, 'utf8').trim();
  if (text.startsWith('[')) return JSON.parse(text) as Conversation[];
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Conversation);
}

function firstExchange(c: Conversation): [string, string] | undefined {
  const turns = c.conversations ?? c.messages ?? [];
  const userIdx = turns.findIndex((t) => (t.from ?? t.role) === 'human' || t.role === 'user');
  const user = turns[userIdx];
  const reply = turns[userIdx + 1];
  if (userIdx < 0 || !user || !reply) return undefined;
  return [user.value ?? user.content ?? '', reply.value ?? reply.content ?? ''];
}

/**
 * First user turn as the prompt, the reply's length as max_tokens. Filters as SGLang does
 * (drops prompts or replies under 2 tokens; without a fixed output length also prompts over
 * 1024 and pairs over 2048 tokens), then shuffles with the seed and takes `numPrompts`.
 */
export function shareGptDataset(
  convs: Conversation[],
  opts: ShareGptOptions,
  rng: SeededRng,
): BenchRequest[] {
  const out: BenchRequest[] = [];
  for (const c of rng.shuffle([...convs])) {
    if (out.length >= opts.numPrompts) break;
    const ex = firstExchange(c);
    if (!ex) continue;
    const promptLen = estimateTokens(ex[0]);
    const outputLen = opts.fixedOutputLen ?? estimateTokens(ex[1]);
    if (promptLen < 2 || outputLen < 2) continue;
    if (opts.fixedOutputLen === undefined && (promptLen > 1024 || promptLen + outputLen > 2048))
      continue;
    out.push({ prompt: ex[0], promptLen, outputLen });
  }
  if (out.length < opts.numPrompts)
    throw new Error(`ShareGPT file yields ${out.length} usable prompts, ${opts.numPrompts} asked`);
  return out;
}
