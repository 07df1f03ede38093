import { describe, expect, it } from 'vitest';
import { byteTokenizer, chatRenderer, outputParsers } from './text-adapters.js';

describe('byteTokenizer', () => {
  const tok = byteTokenizer(256, 255);

  it('round-trips UTF-8 text as byte ids', () => {
    const ids = tok.encode('héllo ✓', { addSpecialTokens: true });
    expect(ids.every((i) => i >= 0 && i < 255)).toBe(true);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('héllo ✓');
  });

  it('streams without splitting a character and skips EOS', () => {
    const d = tok.createDecoder({ skipSpecialTokens: true });
    const [a, b] = tok.encode('é', { addSpecialTokens: false });
    expect(d.feed([0x61, a!])).toBe('a');
    expect(d.feed([b!, 255])).toBe('é');
    expect(d.flush()).toBe('');
  });

  it('ids past the bytes (a dummy real-vocabulary model) decode as <id>, EOS still skipped', () => {
    const big = byteTokenizer(200064, 200020);
    expect(big.decode([0x61, 256, 199999, 200020], { skipSpecialTokens: true })).toBe(
      'a<256><199999>',
    );
    const d = big.createDecoder({ skipSpecialTokens: true });
    expect(d.feed([200020])).toBe('');
    expect(d.feed([1234])).toBe('<1234>');
  });
});

describe('chatRenderer', () => {
  it('falls back to the built-in MiniMax-M3 turn format', () => {
    const render = chatRenderer(undefined);
    const text = render([{ role: 'user', content: 'Hi' }], {
      tools: [],
      addGenerationPrompt: true,
      kwargs: {},
    });
    expect(text).toContain(']~b]user\nHi[e~[\n');
    expect(text.endsWith(']~b]ai\n')).toBe(true);
  });

  it('uses the checkpoint template when there is one', () => {
    const render = chatRenderer('{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}');
    const text = render([{ role: 'user', content: 'Hi' }], {
      tools: [],
      addGenerationPrompt: true,
      kwargs: {},
    });
    expect(text).toBe('<user>Hi');
  });
});

describe('outputParsers', () => {
  it('builds the minimax-m3 parsers and refuses unknown names', () => {
    const p = outputParsers({ reasoning: 'minimax-m3', toolCall: null });
    expect(p.reasoning).toBeDefined();
    expect(p.toolCall).toBeUndefined();
    const r = p.reasoning!({ promptText: ']~b]ai\n<mm:think>', chatTemplateKwargs: {} });
    expect(r.feed('plan</mm:think>answer')).toEqual({ reasoning: 'plan', content: 'answer' });
    expect(() => outputParsers({ reasoning: 'deepseek', toolCall: null })).toThrow(
      /unknown parser/,
    );
  });
});
