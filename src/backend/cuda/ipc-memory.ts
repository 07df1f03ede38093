/**
 * CUDA IPC of device allocations, every call checked: the 64-byte handle of an allocation
 * made here, and the mapping of another process's allocation from its handle. A handle opens
 * only in another process: cuIpcOpenMemHandle of this process's own handle fails
 * (CUDA_ERROR_INVALID_CONTEXT), so ranks that are streams of one process share device
 * pointers directly (ipc-buffers.ts).
 */
import type { CudaDevice } from './device.js';
import { CU_IPC_HANDLE_BYTES } from './ffi.js';

/** CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: peer access to the owner's device is enabled as needed. */
const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;

/** The handle of the allocation that starts at `ptr` (a cuMemAlloc base, not a pool view). */
export function ipcGetMemHandle(dev: CudaDevice, ptr: number): Uint8Array {
  const out: { reserved?: Uint8Array } = {};
  dev.check.cu(dev.libs.cu.cuIpcGetMemHandle(out, ptr), 'cuIpcGetMemHandle');
  if (!(out.reserved instanceof Uint8Array) || out.reserved.length !== CU_IPC_HANDLE_BYTES)
    throw new Error(
      `cuIpcGetMemHandle: the handle did not come back as ${CU_IPC_HANDLE_BYTES} bytes`,
    );
  return Uint8Array.from(out.reserved);
}

/** Maps another process's allocation into this context; returns its device address here. */
export function ipcOpenMemHandle(dev: CudaDevice, handle: Uint8Array, what: string): number {
  if (handle.length !== CU_IPC_HANDLE_BYTES)
    throw new Error(
      `${what}: an IPC handle has ${CU_IPC_HANDLE_BYTES} bytes, got ${handle.length}`,
    );
  const p = [0];
  dev.check.cu(
    dev.libs.cu.cuIpcOpenMemHandle(p, { reserved: handle }, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
    `cuIpcOpenMemHandle(${what})`,
  );
  return Number(p[0]);
}

export function ipcCloseMemHandle(dev: CudaDevice, ptr: number, what: string): void {
  dev.check.cu(dev.libs.cu.cuIpcCloseMemHandle(ptr), `cuIpcCloseMemHandle(${what})`);
}
