import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/**
 * Parses a JSONL file. Lines that do not parse (a write torn by an interruption) are skipped
 * and counted in `onBadLine` so a resumed run redoes them instead of failing.
 */
export function readJsonl<T>(path: string, onBadLine?: (lineNo: number) => void): T[] {
  if (!existsSync(path)) return [];
  const out: T[] = [];
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        out.push(JSON.parse(line) as T);
      } catch {
        onBadLine?.(i + 1);
      }
    });
  return out;
}

/** Makes sure the next append starts on a fresh line after a torn last write. */
export function terminateLastLine(path: string): void {
  if (!existsSync(path)) return;
  const text = readFileSync(path, 'utf8');
  if (text.length > 0 && !text.endsWith('\n')) appendFileSync(path, '\n');
}
