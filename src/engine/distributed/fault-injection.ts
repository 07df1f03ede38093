import type { ForwardModel } from '../../model/forward-model.js';

/**
 * Test seam: at forward step `step` (0-based), or with `at: 'init'` while the rank sets up
 * its backend and communicator, throw, block the thread forever, or exit the process.
 */
export interface InjectedFault {
  readonly step: number;
  readonly mode: 'throw' | 'block' | 'exit';
  readonly at?: 'init' | 'step';
}

/** The fault of `at: 'init'`, run where the rank starts its set-up (no-op for step faults). */
export function runInitFault(fault: InjectedFault | undefined): void {
  if (fault?.at === 'init') runFault(fault, fault.step);
}

/**
 * The rank's model as it is, or, when a test asked for a fault (MOESERVE_FAULT_INJECT), the
 * same model seen through a proxy whose `forward` counts its calls and fails the chosen one.
 * The fault never sits on the production forward path: without a fault nothing is wrapped.
 */
export function withInjectedFault<M extends ForwardModel>(model: M, fault?: InjectedFault): M {
  if (!fault || fault.at === 'init') return model;
  let step = 0;
  const forward: ForwardModel['forward'] = (batch, kv) => {
    runFault(fault, step++);
    return model.forward(batch, kv);
  };
  return new Proxy(model, {
    get(target, prop) {
      if (prop === 'forward') return forward;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function runFault(fault: InjectedFault, step: number): void {
  if (fault.step !== step) return;
  const where = fault.at === 'init' ? 'set-up' : `step ${step}`;
  if (fault.mode === 'throw') throw new Error(`injected fault at ${where}`);
  if (fault.mode === 'exit') {
    process.stderr.write(`injected exit at ${where}\n`);
    process.exit(3); // a process dying abruptly (no status message to rank 0)
  }
  for (;;); // 'block': a synchronous hang, like a device sync that never returns
}
