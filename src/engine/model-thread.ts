/**
 * The model thread of ThreadModelRunner (thread-model-runner.ts): loads the checkpoint on the
 * CPU backend (its own worker pool), builds the M3ModelRunner and answers forwards one at a
 * time, in the order they arrive. Logits leave as a copy whose buffer is transferred: the
 * backend's own output may be a view of its heap that the next step overwrites.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createBackend } from '../backend/create-backend.js';
import { loadModel } from '../model/load-model.js';
import type { LoadProgress } from '../model/weights/load-progress.js';
import { M3ModelRunner } from './m3-model-runner.js';
import type { StepOutput } from './model-runner.js';
import type {
  FromModelThread,
  ModelThreadSpec,
  ThreadError,
  ToModelThread,
} from './thread-model-runner.js';

const port = parentPort!;
const spec = workerData as ModelThreadSpec;
const send = (m: FromModelThread, transfer: ArrayBuffer[] = []): void =>
  port.postMessage(m, transfer);

const progress: LoadProgress = {
  start: (totalBytes, tensors) => send({ kind: 'progress-start', totalBytes, tensors }),
  advance: (bytes) => send({ kind: 'progress-advance', bytes }),
  done: (stats) => send({ kind: 'progress-done', stats }),
};

/** A copy of the output whose buffers can be moved to the main thread. */
function detach(out: StepOutput): { out: StepOutput; transfer: ArrayBuffer[] } {
  const logits = new Float32Array(out.logits);
  const transfer = [logits.buffer];
  let routedExperts: Record<string, Int32Array> | undefined;
  if (out.routedExperts) {
    routedExperts = {};
    for (const [layer, ids] of Object.entries(out.routedExperts)) {
      const copy = new Int32Array(ids);
      routedExperts[layer] = copy;
      transfer.push(copy.buffer);
    }
  }
  return { out: { logits, ...(routedExperts && { routedExperts }) }, transfer };
}

function asData(e: unknown): ThreadError {
  return e instanceof Error
    ? { name: e.name, message: e.message }
    : { name: 'Error', message: String(e) };
}

async function main(): Promise<void> {
  let runner: M3ModelRunner;
  try {
    const model = await loadModel(spec.dir, {
      backend: await createBackend('cpu', {
        cpuThreads: spec.cpuThreads,
        ...(spec.cpuKvCacheDtype && { cpuKvCacheDtype: spec.cpuKvCacheDtype }),
      }),
      ...(spec.loadFormat && { loadFormat: spec.loadFormat }),
      quantization: spec.quantization,
      ...(spec.kvCacheDtype && { kvCacheDtype: spec.kvCacheDtype }),
      progress,
    });
    runner = new M3ModelRunner(model, {
      ...(spec.numPages !== undefined && { numPages: spec.numPages }),
      ...(spec.maxModelLen !== undefined && { maxModelLen: spec.maxModelLen }),
    });
  } catch (e) {
    send({ kind: 'load-failed', error: asData(e) });
    return;
  }
  const { vocabSize, numPages, pageSize, maxModelLen, eosTokenIds, memory } = runner;
  send({
    kind: 'ready',
    info: { vocabSize, numPages, pageSize, maxModelLen, eosTokenIds, memory },
  });
  // Forwards are chained, so a second request waits for the first even across its awaits.
  let queue = Promise.resolve();
  port.on('message', (m: ToModelThread) => {
    queue = queue.then(async () => {
      if (m.kind === 'close') {
        await runner.close();
        process.exit(0); // ends this thread only; the backend's pool workers go with it
      }
      try {
        const { out, transfer } = detach(await runner.forward(m.batch));
        send({ kind: 'output', id: m.id, out }, transfer);
      } catch (e) {
        send({ kind: 'failed', id: m.id, error: asData(e) });
      }
    });
  });
}

void main();
