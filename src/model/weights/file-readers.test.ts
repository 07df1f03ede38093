import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from './checkpoint.js';
import { FileReaders, readSliceParallel } from './file-readers.js';
import { writeRandomCheckpoint } from './random-checkpoint.js';
import { PRESETS } from './random-presets.js';
import { ST_DTYPE_BYTES } from './safetensors-dtype.js';
import { SafetensorsFile } from './safetensors-file.js';
import type { StoredTensor } from './read-chunks.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-readers-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('parallel chunked reads', () => {
  const dir = join(tmp, 'tiny');
  writeRandomCheckpoint({ config: PRESETS['tiny']!(), outDir: dir, seed: 3, dtype: 'f32' });
  const ckpt = openCheckpoint(dir);
  const names = ckpt.names().filter((n) => ckpt.info(n).shape.length === 2);
  afterAll(() => ckpt.close());

  it('return exactly the bytes of the sequential reader, for any slice and chunk size', async () => {
    const readers = new FileReaders();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...names),
          fc.nat(),
          fc.nat(),
          fc.nat(),
          fc.nat(),
          fc.integer({ min: 1, max: 5000 }),
          fc.integer({ min: 1, max: 6 }),
          async (name, a, b, c, d, chunk, inFlight) => {
            const info = ckpt.info(name);
            const [R, C] = info.shape as [number, number];
            const r0 = a % R;
            const c0 = c % C;
            const slice = { rows: [r0, 1 + (b % (R - r0))], cols: [c0, 1 + (d % (C - c0))] } as {
              rows: [number, number];
              cols: [number, number];
            };
            const t: StoredTensor = {
              file: info.file,
              label: `"${name}"`,
              offset: info.offset,
              shape: info.shape,
              elemBytes: ST_DTYPE_BYTES[info.dtype],
            };
            const file = SafetensorsFile.open(info.file);
            const want = file.readBytes(info.rawName, slice);
            file.close();
            const got = await readSliceParallel(readers, t, slice, {
              chunkBytes: chunk * 4,
              inFlight,
            });
            expect(got.shape).toEqual(want.shape);
            expect(Buffer.from(got.bytes).equals(Buffer.from(want.bytes))).toBe(true);
          },
        ),
        { numRuns: 150 },
      );
    } finally {
      await readers.close();
    }
  });

  it('a slice outside the tensor names the file and the tensor', async () => {
    const info = ckpt.info(names[0]!);
    const t = {
      file: info.file,
      label: `"${names[0]}"`,
      offset: info.offset,
      shape: info.shape,
      elemBytes: 4,
    };
    const readers = new FileReaders();
    await expect(
      readSliceParallel(
        readers,
        t,
        { rows: [0, info.shape[0]! + 1] },
        { chunkBytes: 64, inFlight: 2 },
      ),
    ).rejects.toThrow(`${info.file}: tensor "${names[0]}"`);
    await readers.close();
  });
});
