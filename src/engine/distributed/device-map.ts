/**
 * Which GPU each rank of a host opens, and which communicator the group uses. `--gpu-ids`
 * lists one device ordinal per local rank (ordinals of the devices this host's processes
 * see, i.e. indices into CUDA_VISIBLE_DEVICES when it is set); several ranks may name the
 * same GPU. Without it every local rank takes its own GPU, and a host with fewer GPUs than
 * ranks is an error that names the flag: sharing a GPU is never picked silently.
 *
 * NCCL refuses two ranks on one device, so a shared GPU selects the CUDA IPC communicator;
 * asking for NCCL there is an error.
 */
export type CommName = 'cpu' | 'nccl' | 'ipc';

export const COMM_NAMES: readonly CommName[] = ['cpu', 'nccl', 'ipc'];

export interface DeviceMapRequest {
  readonly backend: string;
  /** Ranks on this host (tp / nnodes). */
  readonly localRanks: number;
  readonly nnodes: number;
  /** `--gpu-ids`, parsed; undefined when not given. */
  readonly gpuIds?: readonly number[];
  /** `--comm`; undefined picks by backend and device map. */
  readonly comm?: string;
  /** `--ep` (its token dispatch needs an all-to-all: NCCL's, or the IPC communicator's). */
  readonly ep?: boolean;
}

export interface DeviceMap {
  readonly comm: CommName;
  /** Device ordinal per local rank (CUDA only). */
  readonly gpuIds?: readonly number[];
}

/** `--gpu-ids 0,0,1,1` → [0, 0, 1, 1]; an error naming the flag for anything else. */
export function parseGpuIds(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  const ids = parts.map(Number);
  if (parts.some((p) => p === '') || ids.some((n) => !Number.isInteger(n) || n < 0))
    throw new Error(`--gpu-ids must be comma-separated device ordinals, e.g. 0,0 (got "${text}")`);
  return ids;
}

/**
 * The device map and communicator of a request, before any device is opened. Checks what
 * can be checked without a GPU; `checkDeviceCount` checks the ordinals once the count is known.
 */
export function resolveDeviceMap(r: DeviceMapRequest): DeviceMap {
  const comm = r.comm;
  if (comm !== undefined && !(COMM_NAMES as readonly string[]).includes(comm))
    throw new Error(`--comm must be one of ${COMM_NAMES.join(', ')} (got "${comm}")`);
  if (r.backend !== 'cuda') {
    if (r.gpuIds) throw new Error('--gpu-ids needs --backend cuda');
    if (comm !== undefined && comm !== 'cpu')
      throw new Error(`--comm ${comm} needs --backend cuda (the CPU backend uses --comm cpu)`);
    return { comm: 'cpu' };
  }
  if (comm === 'cpu')
    throw new Error('--comm cpu moves host tensors; with --backend cuda use --comm nccl or ipc');
  const gpuIds = r.gpuIds ?? Array.from({ length: r.localRanks }, (_, i) => i);
  if (gpuIds.length !== r.localRanks)
    throw new Error(
      `--gpu-ids lists ${gpuIds.length} devices for ${r.localRanks} ranks on this host`,
    );
  const shared = sharedDevice(gpuIds);
  if (shared && comm === 'nccl')
    throw new Error(
      `--comm nccl cannot run two ranks on one GPU (--gpu-ids puts ranks ${shared.ranks.join(' and ')} on GPU ${shared.gpu}); use --comm ipc`,
    );
  const chosen: CommName = (comm as CommName | undefined) ?? (shared ? 'ipc' : 'nccl');
  if (chosen === 'ipc' && r.nnodes > 1)
    throw new Error(
      '--comm ipc works between the ranks of one host; use --comm nccl with --nnodes > 1',
    );
  return { comm: chosen, gpuIds };
}

/** Fails when an ordinal is not a device of this host, naming --gpu-ids. */
export function checkDeviceCount(
  gpuIds: readonly number[],
  deviceCount: number,
  given: boolean,
): void {
  const bad = gpuIds.find((g) => g >= deviceCount);
  if (bad === undefined) return;
  const visible = `${deviceCount} GPU${deviceCount === 1 ? ' is' : 's are'} visible`;
  if (!given)
    throw new Error(
      `${gpuIds.length} ranks on this host need ${gpuIds.length} GPUs but ${visible}; to share GPUs pass --gpu-ids (e.g. --gpu-ids ${gpuIds.map(() => 0).join(',')})`,
    );
  throw new Error(`--gpu-ids names GPU ${bad} but ${visible} (ordinals 0..${deviceCount - 1})`);
}

/** How many ranks of the map share local rank `i`'s GPU (itself included). */
export function ranksPerDevice(gpuIds: readonly number[], i: number): number {
  return gpuIds.filter((g) => g === gpuIds[i]).length;
}

function sharedDevice(ids: readonly number[]): { gpu: number; ranks: number[] } | null {
  for (let i = 0; i < ids.length; i++) {
    const j = ids.indexOf(ids[i]!, i + 1);
    if (j >= 0) return { gpu: ids[i]!, ranks: [i, j] };
  }
  return null;
}
