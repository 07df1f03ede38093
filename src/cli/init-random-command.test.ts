import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { openCheckpoint } from '../model/weights/checkpoint.js';
import { runCommand, UsageError } from './command.js';
import { initRandomCommand, resolveConfig } from './init-random-command.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-initcli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('moeserve init-random', () => {
  it('writes a tiny checkpoint with the requested layer count that loads', async () => {
    const out = join(tmp, 'tiny2');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const rc = await runCommand(initRandomCommand, [
      '--config',
      'tiny',
      '--out',
      out,
      '--num-layers',
      '2',
      '--dtype',
      'f32',
      '--seed',
      '5',
    ]);
    expect(rc).toBe(0);
    expect(log.mock.calls[0]?.[0]).toMatch(/wrote \d+ tensors, .* 1 file\(s\) .*\(2 layers, f32\)/);
    log.mockRestore();
    const ck = openCheckpoint(out);
    expect(ck.config.numLayers).toBe(2);
    expect(ck.config.moeLayers).toEqual([false, true]);
    expect(ck.info('model.layers.1.self_attn.q_proj.weight').dtype).toBe('F32');
    ck.close();
  });

  it('takes a config file or a checkpoint folder, and rejects bad options', async () => {
    expect(resolveConfig(goldenCase('tiny-vl-sharded'))['model_type']).toBe('minimax_m3_vl');
    expect(resolveConfig(join(goldenCase('tiny-dense'), 'config.json'))['hidden_size']).toBe(64);
    expect(() => resolveConfig('no-such-preset')).toThrow(UsageError);
    await expect(
      runCommand(initRandomCommand, ['--config', 'tiny', '--out', tmp, '--dtype', 'int4']),
    ).rejects.toThrow(/--dtype must be one of bf16, f32, fp8, mxfp8/);
  });

  it('keeps the VL wrapper and trims its text layers', async () => {
    const out = join(tmp, 'vl');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await runCommand(initRandomCommand, [
      '--config',
      goldenCase('tiny-vl-sharded'),
      '--out',
      out,
      '--num-layers',
      '3',
    ]);
    log.mockRestore();
    const ck = openCheckpoint(out);
    expect(ck.config.isVl).toBe(true);
    expect(ck.config.moeLayers).toEqual([false, true, true]);
    ck.close();
  });

  it('--layout hf-native writes the transformers 5.x dialect and names', async () => {
    const out = join(tmp, 'hf');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await runCommand(initRandomCommand, [
      '--config',
      'tiny',
      '--out',
      out,
      '--layout',
      'hf-native',
    ]);
    expect(log.mock.calls[0]?.[0]).toMatch(/\(4 layers, bf16, layout hf-native\)/);
    log.mockRestore();
    const cfg = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(cfg.text_config.model_type).toBe('minimax_m3_vl_text');
    const ck = openCheckpoint(out);
    expect(ck.config.dialect).toBe('hf-native');
    expect(ck.info('model.layers.1.block_sparse_moe.experts.0.w1.weight').rawName).toBe(
      'language_model.model.layers.1.block_sparse_moe.experts.0.w1.weight',
    );
    ck.close();
    await expect(
      runCommand(initRandomCommand, ['--config', 'tiny', '--out', out, '--layout', 'c']),
    ).rejects.toThrow(/--layout must be one of a, b, vl, hf-native, fused/);
  });
});
