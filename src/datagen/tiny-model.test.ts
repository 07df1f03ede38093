import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { compareGolden, type GoldenExpect } from '../model/golden-compare.js';
import { loadModel } from '../model/load-model.js';
import { runForward } from '../model/run-forward.js';
import { loadTokenizer } from '../tokenizer/load-tokenizer.js';

/** The bundled checkpoint; MOESERVE_TINY_MODEL points the test at another training output. */
const DIR =
  process.env['MOESERVE_TINY_MODEL'] ??
  fileURLToPath(new URL('../../models/moeserve-tiny-m3', import.meta.url));
const REF = `${DIR}/reference-logits.json`;

interface Reference extends GoldenExpect {
  /** Positions whose logits rows are stored (all positions when absent). */
  readonly logit_positions?: readonly number[];
  /** Texts with the ids HF `tokenizers` gave them at training time. */
  readonly tokenizer_check?: readonly { text: string; ids: number[] }[];
}

describe('bundled tiny model', () => {
  it.skipIf(!existsSync(REF))(
    'CPU forward matches the PyTorch training model on its reference logits',
    async () => {
      const ref = JSON.parse(readFileSync(REF, 'utf8')) as Reference;
      const model = await loadModel(DIR, { backend: new CpuBackend() });
      const got = await runForward(model, ref.ids);
      const positions = ref.logit_positions ?? ref.ids.map((_, i) => i);
      const report = compareGolden(ref, {
        logits: positions.map((p) => got.logits[p] ?? []),
        routedExperts: got.routedExperts,
      });
      expect(report.problems).toEqual([]);
      expect(report.maxAbsDiff).toBeLessThan(1e-3);
    },
  );

  it.skipIf(!existsSync(`${DIR}/tokenizer.json`) || !existsSync(REF))(
    'tokenizes as HF tokenizers did at training time',
    () => {
      const ref = JSON.parse(readFileSync(REF, 'utf8')) as Reference;
      const tok = loadTokenizer(DIR);
      expect(ref.tokenizer_check?.length).toBeGreaterThan(0);
      for (const { text, ids } of ref.tokenizer_check ?? []) {
        expect(tok.encode(text, { addSpecialTokens: false })).toEqual(ids);
        expect(tok.decode(ids)).toBe(text);
      }
    },
  );

  it.skipIf(!existsSync(`${DIR}/config.json`))('ships the tokenizer and generation files', () => {
    const cfg = JSON.parse(readFileSync(`${DIR}/config.json`, 'utf8')) as Record<string, unknown>;
    expect(cfg['model_type']).toBe('minimax_m3');
    const gen = JSON.parse(readFileSync(`${DIR}/generation_config.json`, 'utf8')) as {
      eos_token_id: number[];
    };
    expect(gen.eos_token_id).toEqual([cfg['eos_token_id']]);
    if (existsSync(`${DIR}/tokenizer.json`)) {
      const tok = JSON.parse(readFileSync(`${DIR}/tokenizer.json`, 'utf8')) as {
        added_tokens: { id: number; content: string }[];
      };
      const eot = tok.added_tokens.find((t) => t.content === '[e~[');
      expect(eot?.id).toBe(cfg['eos_token_id']);
    }
  });
});
