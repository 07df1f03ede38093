/**
 * GPT-2's reversible byte <-> printable-character table: printable Latin-1 bytes map to
 * themselves, the rest to U+0100 onwards, so every byte string becomes a visible string.
 */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const table: string[] = new Array<string>(256);
  const printable = (b: number): boolean =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  for (let b = 0; b < 256; b++) table[b] = String.fromCharCode(printable(b) ? b : next++);
  return table;
})();

/** Inverse of {@link BYTE_TO_CHAR}. */
export const CHAR_TO_BYTE: ReadonlyMap<string, number> = new Map(
  BYTE_TO_CHAR.map((c, b) => [c, b] as const),
);

const utf8 = new TextEncoder();

/** Text -> its UTF-8 bytes spelled in byte-level characters (what BPE vocabularies store). */
export function toByteLevel(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) return toByteLevelSlow(text);
    out += BYTE_TO_CHAR[code]!;
  }
  return out;
}

function toByteLevelSlow(text: string): string {
  let out = '';
  for (const b of utf8.encode(text)) out += BYTE_TO_CHAR[b]!;
  return out;
}

/**
 * Bytes a stored token stands for. As HF's ByteLevel decoder does, a token with any character
 * outside the table (e.g. an added token containing a space) is taken as plain UTF-8 text.
 */
export function byteLevelTokenBytes(token: string): Uint8Array {
  const bytes = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const b = CHAR_TO_BYTE.get(token[i]!);
    if (b === undefined) return utf8.encode(token);
    bytes[i] = b;
  }
  return bytes;
}
