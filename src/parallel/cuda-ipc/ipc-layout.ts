/**
 * Layout of one rank's registered IPC buffer, mirrored by kernels/allreduce.cu (whose
 * IPC_* macros must equal these; test/kernels/ipc-layout.test.ts reads them from the source):
 *
 *   [0, IPC_SIGNAL_BYTES)               flags: start/mid/end [IPC_MAX_BLOCKS][IPC_MAX_RANKS] u32
 *                                       and one epoch counter per block (u32)
 *   [IPC_SIGNAL_BYTES, + cap)           `in`:  this rank's input, read by every peer
 *   [IPC_SIGNAL_BYTES + cap, + 2·cap)   `tmp`: this rank's reduced slice (two-shot), read by peers
 *
 * The flags start at zero (the allocation is cleared before the handles are exchanged) and
 * the epochs are bumped on the device, so a captured CUDA graph replays correctly.
 */
export const IPC_MAX_RANKS = 8;
export const IPC_MAX_BLOCKS = 128;
export const IPC_SIGNAL_BYTES = 16384;

/** Bytes of each data region for collectives of up to `maxBytes` (256-byte multiple). */
export function regionBytes(maxBytes: number): number {
  if (!(Number.isInteger(maxBytes) && maxBytes > 0))
    throw new Error(`IPC buffers: maxBytes must be a positive integer (got ${maxBytes})`);
  return Math.ceil(maxBytes / 256) * 256;
}

/** Bytes of one rank's whole buffer (signals, `in`, `tmp`). */
export function bufferBytes(cap: number): number {
  return IPC_SIGNAL_BYTES + 2 * cap;
}

/**
 * Blocks per collective launch. Every rank's block b waits for block b of every other rank,
 * so all blocks of all ranks sharing a GPU must be resident at once: with at most
 * floor(SMs / ranksPerDevice) blocks per rank they fit one per SM (512 threads each).
 */
export function maxBlocks(smCount: number, ranksPerDevice: number): number {
  if (!(Number.isInteger(ranksPerDevice) && ranksPerDevice >= 1))
    throw new Error(`IPC: ranksPerDevice must be a positive integer (got ${ranksPerDevice})`);
  const b = Math.min(IPC_MAX_BLOCKS, Math.floor(smCount / ranksPerDevice));
  if (b < 1) throw new Error(`IPC: ${ranksPerDevice} ranks cannot share a GPU of ${smCount} SMs`);
  return b;
}

export function checkWorldSize(worldSize: number): void {
  if (!(Number.isInteger(worldSize) && worldSize >= 2 && worldSize <= IPC_MAX_RANKS))
    throw new Error(`the CUDA IPC communicator runs 2..${IPC_MAX_RANKS} ranks (got ${worldSize})`);
}
