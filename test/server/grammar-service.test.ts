import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import { grammarVocab } from '../../src/server/grammar-vocab.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { maskAllows } from '../../src/engine/logits-constraint.js';
import { GrammarError } from '../../src/engine/grammar/grammar-checker.js';
import { GrammarService } from '../../src/engine/grammar/grammar-service.js';

// The grammar service over the bundled model's real vocabulary (byte-level BPE, V = 3072).
describe('GrammarService (bundled vocabulary)', () => {
  const tok = loadTokenizer(BUNDLED_MODEL_DIR);
  const EOS = 2;
  const vocab = grammarVocab(tok, 3072, [EOS]);
  let service: GrammarService;
  beforeAll(async () => {
    service = await GrammarService.create(vocab, 2);
  });
  afterAll(() => service.close());

  const schema = JSON.stringify({
    type: 'object',
    properties: { n: { type: 'integer' }, s: { type: 'string', enum: ['a', 'b'] } },
    required: ['n', 's'],
  });

  /** Feeds `text`'s tokens and EOS through a constraint, checking every mask allows them. */
  async function drive(text: string, reasoning: 'none' | 'may-think' | 'inside' = 'none') {
    const { constraint: c, dispose } = await service.constraint(
      { kind: 'json_schema', schema },
      reasoning,
    );
    const ids = [...tok.encode(text, { addSpecialTokens: false }), EOS];
    const rejected: number[] = [];
    for (const id of ids) {
      await c.prepare?.();
      const mask = c.nextTokenMask();
      if (mask && !maskAllows(mask, id)) {
        rejected.push(id);
        break;
      }
      c.accept(id);
    }
    const done = c.isTerminated();
    dispose();
    return { rejected, done };
  }

  it('builds the vocabulary from token bytes: markers kept, specials and non-UTF-8 bytes blanked', () => {
    expect(vocab.encodedVocab[5]).toBe(']<]minimax[>[');
    expect(vocab.encodedVocab[1]).toBe(''); // ]~b] is a special turn marker
    expect(vocab.encodedVocab[EOS]).toBe('[e~[');
    expect(vocab.think).toEqual({ open: 3, close: 4 });
    const space = tok.encode(' a', { addSpecialTokens: false })[0]!;
    expect(vocab.encodedVocab[space]!.startsWith('Ġ')).toBe(true);
  });

  it('allows exactly the schema: valid JSON terminates on EOS, invalid JSON is masked', async () => {
    expect(await drive('{"n": 12, "s": "b"}')).toEqual({ rejected: [], done: true });
    expect((await drive('{"n": "x"}')).rejected.length).toBe(1);
    expect((await drive('{"n": 1, "s": "c"}')).rejected.length).toBe(1);
    expect((await drive('hello')).rejected.length).toBe(1);
  });

  it('leaves reasoning free but never lets it end the output', async () => {
    const think = '<mm:think>just "text" {</mm:think>{"n": 1, "s": "a"}';
    expect(await drive(think, 'may-think')).toEqual({ rejected: [], done: true });
    expect(await drive('free [text]</mm:think>{"n": 1, "s": "a"}', 'inside')).toEqual({
      rejected: [],
      done: true,
    });
    const { constraint: c, dispose } = await service.constraint(
      { kind: 'json_schema', schema },
      'inside',
    );
    await c.prepare?.();
    expect(maskAllows(c.nextTokenMask()!, EOS)).toBe(false);
    expect(maskAllows(c.nextTokenMask()!, 100)).toBe(true);
    dispose();
  });

  it("rejects invalid grammars with xgrammar's reason and keeps serving", async () => {
    await expect(
      service.constraint({ kind: 'json_schema', schema: '{"type": "foo"}' }, 'none'),
    ).rejects.toThrow(GrammarError);
    await expect(
      service.constraint({ kind: 'ebnf', grammar: 'root ::= "a" b' }, 'none'),
    ).rejects.toThrow(/Rule "b" is not defined/);
    expect(await drive('{"n": 3, "s": "a"}')).toEqual({ rejected: [], done: true });
  });

  it('compiles a grammar once and keeps at most cacheSize of them', async () => {
    const spec = { kind: 'json_schema', schema } as const;
    const a = service.compiled(spec);
    expect(service.compiled(spec)).toBe(a);
    service.compiled({ kind: 'json_object' });
    service.compiled({ kind: 'ebnf', grammar: 'root ::= "x"' });
    expect(service.cachedGrammars).toBe(2);
    expect(service.compiled(spec)).not.toBe(a); // evicted, compiled again
    await service.compiled(spec);
  });
});
