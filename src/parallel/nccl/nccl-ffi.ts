/**
 * koffi declarations of the NCCL entry points moeserve uses (nccl.h, NCCL ≥ 2.12). Loaded
 * only when `--comm nccl` is selected. Conventions, as in backend/cuda/ffi.ts: device
 * addresses are passed as uint64_t (pointer-sized integers in the same registers), the
 * communicator and the CUDA stream are opaque `void *` handles, enums are `int`.
 *
 * The unique id is `struct { uint8_t internal[128]; }`: declared with uint8_t, not char,
 * because koffi turns a char array into a string cut at the first zero byte.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import koffi from 'koffi';
import { candidateDirs } from '../../backend/cuda/library-paths.js';
import { readEnv } from '../../config/env.js';

export const NCCL_UNIQUE_ID_BYTES = 128;

/** ncclDataType_t values. */
export const NCCL_DTYPE = {
  int8: 0,
  uint8: 1,
  int32: 2,
  float16: 6,
  float32: 7,
  bfloat16: 9,
} as const;
/** ncclRedOp_t values. */
export const NCCL_SUM = 0;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fn = ((...args: any[]) => any) & { async: (...args: any[]) => void };

export interface NcclLib {
  readonly path: string;
  readonly uniqueIdType: unknown;
  readonly ncclGetVersion: Fn;
  readonly ncclGetUniqueId: Fn;
  readonly ncclCommInitRank: Fn;
  readonly ncclCommDestroy: Fn;
  readonly ncclCommAbort: Fn;
  readonly ncclCommGetAsyncError: Fn;
  readonly ncclGetErrorString: Fn;
  readonly ncclGetLastError: Fn | null;
  readonly ncclAllReduce: Fn;
  readonly ncclAllGather: Fn;
  readonly ncclReduceScatter: Fn;
  readonly ncclBroadcast: Fn;
  readonly ncclSend: Fn;
  readonly ncclRecv: Fn;
  readonly ncclGroupStart: Fn;
  readonly ncclGroupEnd: Fn;
}

let loaded: NcclLib | null = null;

/** libnccl: MOESERVE_LIBNCCL, else the CUDA library folders and pip's nvidia/nccl/lib, else the soname. */
export function findNccl(): string {
  const override = readEnv().libraryFile.nccl;
  if (override) return override;
  for (const dir of [...candidateDirs(), ...ncclWheelDirs()]) {
    const p = join(dir, 'libnccl.so.2');
    if (existsSync(p)) return p;
  }
  return 'libnccl.so.2';
}

function ncclWheelDirs(): string[] {
  const out: string[] = [];
  for (const base of ['/usr/local/lib', '/usr/lib', `${readEnv().home}/.local/lib`]) {
    let pys: string[] = [];
    try {
      pys = readdirSync(base).filter((e) => e.startsWith('python3'));
    } catch {
      continue;
    }
    for (const py of pys)
      for (const sp of ['site-packages', 'dist-packages'])
        out.push(join(base, py, sp, 'nvidia/nccl/lib'));
  }
  return out;
}

export function loadNccl(): NcclLib {
  if (loaded) return loaded;
  const path = findNccl();
  let lib: ReturnType<typeof koffi.load>;
  try {
    lib = koffi.load(path);
  } catch (e) {
    throw new Error(
      `cannot load NCCL (${path}): ${(e as Error).message.split('\n')[0]}; set MOESERVE_LIBNCCL`,
    );
  }
  const uniqueIdType = koffi.struct('ncclUniqueId', {
    internal: koffi.array('uint8_t', NCCL_UNIQUE_ID_BYTES, 'Typed'),
  });
  const f = (sig: string): Fn => lib.func(sig) as Fn;
  const optional = (sig: string): Fn | null => {
    try {
      return f(sig);
    } catch {
      return null;
    }
  };
  loaded = {
    path,
    uniqueIdType,
    ncclGetVersion: f('int ncclGetVersion(_Out_ int *version)'),
    ncclGetUniqueId: f('int ncclGetUniqueId(_Out_ ncclUniqueId *uniqueId)'),
    // The comm handle is written through a pointer we own (valid across an async call).
    ncclCommInitRank: f(
      'int ncclCommInitRank(void *comm, int nranks, ncclUniqueId commId, int rank)',
    ),
    ncclCommDestroy: f('int ncclCommDestroy(void *comm)'),
    ncclCommAbort: f('int ncclCommAbort(void *comm)'),
    ncclCommGetAsyncError: f('int ncclCommGetAsyncError(void *comm, _Out_ int *asyncError)'),
    ncclGetErrorString: f('const char *ncclGetErrorString(int result)'),
    ncclGetLastError: optional('const char *ncclGetLastError(void *comm)'),
    ncclAllReduce: f(
      'int ncclAllReduce(uint64_t sendbuff, uint64_t recvbuff, size_t count, int datatype, int op, void *comm, void *stream)',
    ),
    ncclAllGather: f(
      'int ncclAllGather(uint64_t sendbuff, uint64_t recvbuff, size_t sendcount, int datatype, void *comm, void *stream)',
    ),
    ncclReduceScatter: f(
      'int ncclReduceScatter(uint64_t sendbuff, uint64_t recvbuff, size_t recvcount, int datatype, int op, void *comm, void *stream)',
    ),
    ncclBroadcast: f(
      'int ncclBroadcast(uint64_t sendbuff, uint64_t recvbuff, size_t count, int datatype, int root, void *comm, void *stream)',
    ),
    ncclSend: f(
      'int ncclSend(uint64_t sendbuff, size_t count, int datatype, int peer, void *comm, void *stream)',
    ),
    ncclRecv: f(
      'int ncclRecv(uint64_t recvbuff, size_t count, int datatype, int peer, void *comm, void *stream)',
    ),
    ncclGroupStart: f('int ncclGroupStart()'),
    ncclGroupEnd: f('int ncclGroupEnd()'),
  };
  return loaded;
}

/** A native 8-byte slot for an output handle, and a reader for it. */
export function handleSlot(): { slot: unknown; read: () => unknown } {
  const slot = koffi.alloc('void *', 1);
  return { slot, read: () => koffi.decode(slot, 'void *') as unknown };
}
