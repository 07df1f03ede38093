import { DelegatingCommunicator, type InnerCommunicator } from './delegating-communicator.js';

/**
 * Passes every collective to `inner` after calling `entered()`: the rank's count of
 * collectives entered, which its hang watchdog publishes so that a launcher can tell the
 * rank that stopped (fewest entered) from the peers waiting for it in the next collective.
 * The optional fused ops are forwarded where `inner` has them (absent otherwise, as there).
 */
export class ProgressCommunicator extends DelegatingCommunicator {
  constructor(
    inner: InnerCommunicator,
    private readonly entered: () => void,
  ) {
    super(inner);
  }

  protected override around(call: () => void | Promise<void>): void | Promise<void> {
    this.entered();
    return call();
  }
}
