import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  bufferBytes,
  checkWorldSize,
  IPC_MAX_BLOCKS,
  IPC_MAX_RANKS,
  IPC_SIGNAL_BYTES,
  maxBlocks,
  regionBytes,
} from './ipc-layout.js';

const CU = readFileSync(
  fileURLToPath(new URL('../../backend/cuda/kernels/allreduce.cu', import.meta.url)),
  'utf8',
);

function macro(name: string): number {
  const m = new RegExp(`^#define ${name} (\\d+)`, 'm').exec(CU);
  if (!m) throw new Error(`${name} not defined in allreduce.cu`);
  return Number(m[1]);
}

describe('IPC buffer layout', () => {
  it('matches the kernels’ macros', () => {
    expect(macro('IPC_MAX_RANKS')).toBe(IPC_MAX_RANKS);
    expect(macro('IPC_MAX_BLOCKS')).toBe(IPC_MAX_BLOCKS);
    expect(macro('IPC_SIGNAL_BYTES')).toBe(IPC_SIGNAL_BYTES);
    // start/mid/end flags plus the epochs fit the signal area (the .cu static_asserts it too).
    expect((3 * IPC_MAX_BLOCKS * IPC_MAX_RANKS + IPC_MAX_BLOCKS) * 4).toBeLessThanOrEqual(
      IPC_SIGNAL_BYTES,
    );
  });

  it('rounds regions to 256 bytes and rejects non-sizes', () => {
    expect(regionBytes(1)).toBe(256);
    expect(regionBytes(8192 * 6144 * 4)).toBe(8192 * 6144 * 4);
    expect(bufferBytes(256)).toBe(IPC_SIGNAL_BYTES + 512);
    expect(() => regionBytes(0)).toThrow(/maxBytes/);
    expect(() => regionBytes(1.5)).toThrow(/maxBytes/);
  });

  it('sizes the grid so every rank sharing a GPU is resident', () => {
    expect(maxBlocks(132, 1)).toBe(IPC_MAX_BLOCKS);
    expect(maxBlocks(132, 2)).toBe(66);
    expect(maxBlocks(132, 8)).toBe(16);
    expect(() => maxBlocks(4, 8)).toThrow(/cannot share/);
    expect(() => maxBlocks(132, 0)).toThrow(/ranksPerDevice/);
  });

  it('takes 2..8 ranks', () => {
    expect(() => checkWorldSize(1)).toThrow(/2\.\.8/);
    expect(() => checkWorldSize(9)).toThrow(/2\.\.8/);
    expect(() => checkWorldSize(8)).not.toThrow();
  });
});
