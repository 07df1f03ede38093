/**
 * Converts the Oniguruma patterns found in tokenizer.json into JavaScript `u` regexes.
 * Handles what HF pre-tokenizer patterns actually use beyond JS syntax: scoped case-folding
 * groups `(?i:...)` (JS gained them only in newer V8) and possessive quantifiers (`?+`, `++`,
 * `*+`, `}+`), which are dropped: on these patterns they only prune backtracking.
 */
export function onigToJsRegex(pattern: string, flags = 'gu'): RegExp {
  return new RegExp(convert(pattern), flags);
}

function convert(src: string): string {
  let out = '';
  let inClass = false;
  // Group depths at which a (?i: group was opened; letters fold while it is non-empty.
  const foldDepths: number[] = [];
  let depth = 0;
  // Whether the previous atom was a quantifier, so that a '+' now makes it possessive.
  let afterQuantifier = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    const wasQuantifier = afterQuantifier;
    afterQuantifier = false;
    if (c === '\\') {
      const esc = escapeAt(src, i);
      out += esc;
      i += esc.length - 1;
      continue;
    }
    const folding = foldDepths.length > 0;
    if (inClass) {
      if (c === ']') inClass = false;
      out += folding && isAsciiLetter(c) ? bothCases(c) : c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      if (src[i + 1] === '^') out += src[++i];
      continue;
    }
    if (c === '(') {
      depth++;
      if (src.startsWith('(?i:', i)) {
        foldDepths.push(depth);
        out += '(?:';
        i += 3;
        continue;
      }
      out += c;
      continue;
    }
    if (c === ')') {
      if (foldDepths[foldDepths.length - 1] === depth) foldDepths.pop();
      depth--;
      out += c;
      continue;
    }
    if (c === '+' && wasQuantifier) continue;
    if (c === '{') {
      const close = src.indexOf('}', i);
      if (close > 0 && /^\{\d*,?\d*\}$/.test(src.slice(i, close + 1))) {
        out += src.slice(i, close + 1);
        i = close;
        afterQuantifier = true;
        continue;
      }
    }
    afterQuantifier = c === '?' || c === '*' || c === '+';
    out += folding && isAsciiLetter(c) ? `[${bothCases(c)}]` : c;
  }
  return out;
}

/** The escape sequence starting at `i` (`\x`, or `\p{...}` whole). */
function escapeAt(src: string, i: number): string {
  const kind = src[i + 1] ?? '';
  if ((kind === 'p' || kind === 'P') && src[i + 2] === '{') {
    const close = src.indexOf('}', i + 3);
    if (close > 0) return src.slice(i, close + 1);
  }
  return src.slice(i, i + 2);
}

function isAsciiLetter(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

function bothCases(c: string): string {
  return c.toLowerCase() + c.toUpperCase();
}
