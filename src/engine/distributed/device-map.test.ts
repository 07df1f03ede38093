import { describe, expect, it } from 'vitest';
import { checkDeviceCount, parseGpuIds, ranksPerDevice, resolveDeviceMap } from './device-map.js';

const cuda = { backend: 'cuda', nnodes: 1 } as const;

describe('device map (--gpu-ids, --comm)', () => {
  it('parses ordinals and names the flag on anything else', () => {
    expect(parseGpuIds('0, 0,1')).toEqual([0, 0, 1]);
    for (const bad of ['', '0,,1', '-1', '0.5', 'a'])
      expect(() => parseGpuIds(bad)).toThrow(/--gpu-ids must be/);
  });

  it('gives every local rank its own GPU by default, over NCCL', () => {
    expect(resolveDeviceMap({ ...cuda, localRanks: 4 })).toEqual({
      comm: 'nccl',
      gpuIds: [0, 1, 2, 3],
    });
  });

  it('selects the IPC communicator when two ranks share a GPU', () => {
    expect(resolveDeviceMap({ ...cuda, localRanks: 4, gpuIds: [0, 0, 0, 0] })).toEqual({
      comm: 'ipc',
      gpuIds: [0, 0, 0, 0],
    });
    expect(resolveDeviceMap({ ...cuda, localRanks: 2, gpuIds: [1, 0] }).comm).toBe('nccl');
    expect(resolveDeviceMap({ ...cuda, localRanks: 2, gpuIds: [1, 0], comm: 'ipc' }).comm).toBe(
      'ipc',
    );
  });

  it('refuses NCCL on a shared GPU, naming the ranks and the GPU', () => {
    expect(() =>
      resolveDeviceMap({ ...cuda, localRanks: 3, gpuIds: [0, 1, 1], comm: 'nccl' }),
    ).toThrow(
      '--comm nccl cannot run two ranks on one GPU (--gpu-ids puts ranks 1 and 2 on GPU 1)',
    );
  });

  it('refuses mismatched lengths, CPU-only flags and unknown communicators', () => {
    expect(() => resolveDeviceMap({ ...cuda, localRanks: 4, gpuIds: [0, 0] })).toThrow(
      '--gpu-ids lists 2 devices for 4 ranks on this host',
    );
    expect(() => resolveDeviceMap({ ...cuda, localRanks: 2, comm: 'cpu' })).toThrow(
      /--comm cpu moves host tensors/,
    );
    expect(() => resolveDeviceMap({ ...cuda, localRanks: 2, comm: 'mpi' })).toThrow(
      /--comm must be one of cpu, nccl, ipc/,
    );
    expect(() =>
      resolveDeviceMap({ backend: 'cpu', nnodes: 1, localRanks: 2, gpuIds: [0, 0] }),
    ).toThrow('--gpu-ids needs --backend cuda');
    expect(() =>
      resolveDeviceMap({ backend: 'cpu', nnodes: 1, localRanks: 2, comm: 'ipc' }),
    ).toThrow(/--comm ipc needs --backend cuda/);
    expect(resolveDeviceMap({ backend: 'cpu', nnodes: 1, localRanks: 2 })).toEqual({ comm: 'cpu' });
    expect(() =>
      resolveDeviceMap({ backend: 'cuda', nnodes: 2, localRanks: 2, gpuIds: [0, 0] }),
    ).toThrow(/--comm ipc works between the ranks of one host/);
  });

  it('runs --ep over IPC on a shared GPU (its all-to-all), over NCCL on one GPU per rank', () => {
    expect(resolveDeviceMap({ ...cuda, localRanks: 2, gpuIds: [0, 0], ep: true }).comm).toBe('ipc');
    expect(resolveDeviceMap({ ...cuda, localRanks: 2, ep: true }).comm).toBe('nccl');
  });

  it('checks ordinals against the visible GPUs, pointing at --gpu-ids when it was not given', () => {
    expect(() => checkDeviceCount([0, 1], 1, false)).toThrow(
      '2 ranks on this host need 2 GPUs but 1 GPU is visible; to share GPUs pass --gpu-ids (e.g. --gpu-ids 0,0)',
    );
    expect(() => checkDeviceCount([0, 3], 2, true)).toThrow(
      '--gpu-ids names GPU 3 but 2 GPUs are visible (ordinals 0..1)',
    );
    expect(() => checkDeviceCount([0, 0, 0, 0], 1, true)).not.toThrow();
  });

  it('counts the ranks sharing a rank’s GPU', () => {
    expect([0, 1, 2, 3].map((i) => ranksPerDevice([0, 0, 1, 0], i))).toEqual([3, 3, 1, 3]);
  });
});
