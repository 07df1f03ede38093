/**
 * Splits a text/event-stream into `data:` payloads. OpenAI-compatible servers send one
 * `data:` line per event, so each payload is returned as soon as its line is complete.
 */
export class SseLineSplitter {
  private pending = '';

  /** Feeds decoded text; returns the complete `data:` payloads it finished. */
  feed(text: string): string[] {
    const buf = this.pending + text;
    const out: string[] = [];
    let from = 0;
    for (let nl = buf.indexOf('\n', from); nl !== -1; nl = buf.indexOf('\n', from)) {
      const payload = dataPayload(buf, from, nl);
      if (payload !== undefined) out.push(payload);
      from = nl + 1;
    }
    this.pending = buf.slice(from);
    return out;
  }

  /** Returns a trailing payload that arrived without its newline, if any. */
  flush(): string[] {
    const rest = this.pending;
    this.pending = '';
    const payload = dataPayload(rest, 0, rest.length);
    return payload === undefined ? [] : [payload];
  }
}

function dataPayload(buf: string, start: number, end: number): string | undefined {
  if (!buf.startsWith('data:', start)) return undefined;
  let e = end;
  if (e > start && buf.charCodeAt(e - 1) === 13) e--;
  return buf.slice(start + 5, e).trim();
}
