/** MiniMax-M3 control strings (shared/design/minimax-m3.md §4). */
export const M3_TOKENS = {
  /** Begin of sequence, written once before the first turn. */
  bos: ']~!b[',
  /** Begin of a turn: `]~b]{role}\n`. */
  turnStart: ']~b]',
  /** End of a turn and the model's EOS. */
  turnEnd: '[e~[',
  thinkOpen: '<mm:think>',
  thinkClose: '</mm:think>',
  /** Namespace marker written before every tag of a tool-call block. */
  ns: ']<]minimax[>[',
  toolCallOpen: '<tool_call>',
  toolCallClose: '</tool_call>',
} as const;

/**
 * Markers the output parsers must see in decoded text. Pass their ids as
 * `IncrementalDecoder` `keepIds` when the tokenizer flags any of them special.
 */
export const M3_PARSER_MARKERS: readonly string[] = [
  M3_TOKENS.thinkOpen,
  M3_TOKENS.thinkClose,
  M3_TOKENS.ns,
  M3_TOKENS.toolCallOpen,
  M3_TOKENS.toolCallClose,
];

/**
 * Ids of {@link M3_PARSER_MARKERS} in a vocabulary (those it has), for `IncrementalDecoder`
 * `keepIds`: a tokenizer that flags them special would otherwise hide them from the parsers.
 */
export function parserMarkerIds(tokenizer: {
  tokenToId(token: string): number | undefined;
}): Set<number> {
  const ids = new Set<number>();
  for (const marker of M3_PARSER_MARKERS) {
    const id = tokenizer.tokenToId(marker);
    if (id !== undefined) ids.add(id);
  }
  return ids;
}
