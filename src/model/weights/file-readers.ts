import { open, type FileHandle } from 'node:fs/promises';
import { SafetensorsError } from './safetensors-file.js';
import { compactRows, planReadChunks, type ReadChunk, type StoredTensor } from './read-chunks.js';
import type { SliceSpec } from './safetensors-file.js';

/**
 * Asynchronous positional reads of checkpoint files, one handle per file. Reads run on
 * libuv's thread pool, so several are in flight at once (UV_THREADPOOL_SIZE, default 4).
 */
export class FileReaders {
  private readonly handles = new Map<string, Promise<FileHandle>>();

  /** Fills `target` with the bytes at [pos, pos + target.length) of `t.file`, or throws naming the tensor. */
  async read(t: StoredTensor, pos: number, target: Uint8Array): Promise<void> {
    const fh = await this.handle(t.file);
    let done = 0;
    while (done < target.byteLength) {
      const { bytesRead } = await fh.read(target, done, target.byteLength - done, pos + done);
      if (bytesRead === 0)
        throw new SafetensorsError(
          `${t.file}: tensor ${t.label}: unexpected end of file at byte ${pos + done} (truncated?)`,
        );
      done += bytesRead;
    }
  }

  /** Reads one planned chunk into the front of `slot` (compacting column slices). */
  async readChunk(t: StoredTensor, c: ReadChunk, slot: Uint8Array): Promise<Uint8Array> {
    await this.read(t, c.pos, slot.subarray(0, c.len));
    if (c.compact) compactRows(slot, c.compact);
    return slot.subarray(0, c.outBytes);
  }

  async close(): Promise<void> {
    const all = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(all.map(async (h) => (await h.catch(() => null))?.close()));
  }

  private handle(file: string): Promise<FileHandle> {
    let h = this.handles.get(file);
    if (!h) {
      h = open(file, 'r').catch((e: Error) => {
        throw new SafetensorsError(`${file}: cannot open (${e.message})`);
      });
      this.handles.set(file, h);
    }
    return h;
  }
}

/**
 * Reads a slice with up to `inFlight` chunk reads at once into one packed buffer: the bytes
 * `SafetensorsFile.readBytes` returns, read in parallel.
 */
export async function readSliceParallel(
  readers: FileReaders,
  t: StoredTensor,
  slice: SliceSpec,
  o: { chunkBytes: number; inFlight: number },
): Promise<{ shape: number[]; bytes: Uint8Array }> {
  const plan = planReadChunks(t, slice, o.chunkBytes);
  const out = new Uint8Array(plan.bytes);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < plan.chunks.length; i = next++) {
      const c = plan.chunks[i]!;
      out.set(await readers.readChunk(t, c, new Uint8Array(c.len)), c.outOffset);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.inFlight) }, worker));
  return { shape: plan.shape, bytes: out };
}
