import { describe, expect, it } from 'vitest';
import { SseLineSplitter } from './sse-line-splitter.js';

describe('SseLineSplitter', () => {
  it('returns payloads across arbitrary chunk boundaries', () => {
    const s = new SseLineSplitter();
    expect(s.feed('data: {"a":1}\n\nda')).toEqual(['{"a":1}']);
    expect(s.feed('ta: {"b"')).toEqual([]);
    expect(s.feed(':2}\r\n\r\ndata: [DONE]\n\n')).toEqual(['{"b":2}', '[DONE]']);
  });

  it('ignores comments and other fields, flushes a trailing line', () => {
    const s = new SseLineSplitter();
    expect(s.feed(': keep-alive\nevent: x\nid: 3\n')).toEqual([]);
    expect(s.feed('data: tail')).toEqual([]);
    expect(s.flush()).toEqual(['tail']);
  });
});
