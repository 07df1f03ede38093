import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { BUNDLED_MODEL_DIR, createEngineFromModelDir } from '../../src/cli/serve-command.js';

// The serve path (createEngineFromModelDir: config, weights, tokenizer) over corrupted copies
// of the bundled model: each corruption is one error line naming the file and the tensor or
// field, never a model that loads and then serves garbage.
const tmp = mkdtempSync(join(tmpdir(), 'moeserve-corrupt-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let caseNo = 0;

function copyModel(): string {
  const dir = join(tmp, `m${caseNo++}`);
  cpSync(BUNDLED_MODEL_DIR, dir, { recursive: true });
  return dir;
}

interface Header {
  [name: string]: { dtype: string; shape: number[]; data_offsets: [number, number] };
}

/** Rewrites the safetensors header (padded with spaces to its old length, so data stays put). */
function editHeader(file: string, edit: (h: Header) => void): void {
  const bytes = readFileSync(file);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Header;
  edit(header);
  const text = JSON.stringify(header);
  expect(text.length).toBeLessThanOrEqual(n);
  bytes.write(text.padEnd(n, ' '), 8, 'utf8');
  writeFileSync(file, bytes);
}

function dataStart(file: string): number {
  return 8 + Number(readFileSync(file).readBigUInt64LE(0));
}

function editConfig(dir: string, edit: (c: Record<string, unknown>) => void): void {
  const path = join(dir, 'config.json');
  const c = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  edit(c);
  writeFileSync(path, JSON.stringify(c));
}

const load = (dir: string) => createEngineFromModelDir(dir, { backend: 'cpu', numPages: 16 });

/** Loads and expects one error line matching `re`. */
async function expectLoadError(dir: string, re: RegExp): Promise<void> {
  const err = (await load(dir).then(
    () => null,
    (e: unknown) => e as Error,
  )) as Error | null;
  expect(err, 'the corrupted checkpoint loaded').not.toBeNull();
  expect(err!.message).toMatch(re);
  expect(err!.message.split('\n')).toHaveLength(1);
}

describe('corrupted checkpoints fail the load with one line naming file and tensor or field', () => {
  it('a NaN in lm_head', async () => {
    const dir = copyModel();
    const file = join(dir, 'model.safetensors');
    let at = 0;
    editHeader(file, (h) => (at = h['lm_head.weight']!.data_offsets[0]));
    const bytes = readFileSync(file);
    bytes.set([0xc0, 0x7f], dataStart(file) + at + 2 * 1234); // a bf16 quiet NaN
    writeFileSync(file, bytes);
    await expectLoadError(dir, /model\.safetensors: tensor "lm_head\.weight" holds 1 non-finite/);
  });

  it('overlapping data_offsets', async () => {
    const dir = copyModel();
    const file = join(dir, 'model.safetensors');
    editHeader(file, (h) => {
      h['model.layers.1.self_attn.o_proj.weight']!.data_offsets = [
        ...h['model.layers.0.self_attn.o_proj.weight']!.data_offsets,
      ];
    });
    await expectLoadError(
      dir,
      /model\.safetensors: tensor "model\.layers\.[01]\.self_attn\.o_proj\.weight": data \[\d+, \d+\) overlaps tensor "model\.layers\.[01]\.self_attn\.o_proj\.weight"/,
    );
  });

  it('data_offsets past the end of the file', async () => {
    const dir = copyModel();
    const file = join(dir, 'model.safetensors');
    let last = '';
    editHeader(file, (h) => {
      // The tensor stored last, moved 16 bytes on: the same digits, now past the end.
      const names = Object.keys(h).filter((k) => k !== '__metadata__');
      last = names.reduce((a, b) => (h[a]!.data_offsets[1] >= h[b]!.data_offsets[1] ? a : b));
      const [b, e] = h[last]!.data_offsets;
      h[last]!.data_offsets = [b + 16, e + 16];
    });
    const name = last.replace(/\./g, '\\.');
    await expectLoadError(
      dir,
      new RegExp(`model\\.safetensors: tensor "${name}": .*beyond the end of the file`),
    );
  });

  it.each([
    ['rms_norm_eps', -1, (c: Record<string, unknown>) => (c['rms_norm_eps'] = -1)],
    ['rope_theta', 0, (c: Record<string, unknown>) => (c['rope_theta'] = 0)],
    ['num_experts_per_tok', 1.5, (c: Record<string, unknown>) => (c['num_experts_per_tok'] = 1.5)],
    [
      'sparse_topk_blocks',
      2.5,
      (c: Record<string, unknown>) =>
        ((c['sparse_attention_config'] as Record<string, unknown>)['sparse_topk_blocks'] = 2.5),
    ],
  ])('config %s: %s', async (field, _value, edit) => {
    const dir = copyModel();
    editConfig(dir, edit);
    await expectLoadError(dir, new RegExp(`config\\.json.*"${field}"|"${field}".*config\\.json`));
  });

  it('a missing tokenizer.json is a warning line, silenced by --skip-tokenizer-init', async () => {
    const dir = copyModel();
    rmSync(join(dir, 'tokenizer.json'));
    const lines: string[] = [];
    const spy = vi
      .spyOn(console, 'error')
      .mockImplementation((l: unknown) => void lines.push(String(l)));
    try {
      await (await load(dir)).engine.shutdown();
      expect(lines.filter((l) => /tokenizer\.json is missing/.test(l))).toHaveLength(1);
      expect(lines.find((l) => /tokenizer/.test(l))).toMatch(/--skip-tokenizer-init/);
      lines.length = 0;
      const s = await createEngineFromModelDir(dir, {
        backend: 'cpu',
        numPages: 16,
        skipTokenizerInit: true,
      });
      await s.engine.shutdown();
      expect(lines.filter((l) => /tokenizer/.test(l))).toHaveLength(0);
    } finally {
      spy.mockRestore();
    }
  });
});
