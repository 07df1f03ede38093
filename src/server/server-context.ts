import type { SequenceLimiter } from './admission.js';
import type { Engine } from '../engine/engine-types.js';
import type { GrammarService } from '../engine/grammar/grammar-service.js';
import type { ValidationContext } from './openai/validate.js';
import type { ChatRenderer, OutputParsers, ServerTokenizer } from './server-deps.js';
import type { ServerMetrics } from './server-metrics.js';
import type { ServerOptions } from './server-options.js';

/** Counts generation requests in flight against --max-concurrent-requests. */
export class ConcurrencyLimiter {
  private active = 0;

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.active;
  }

  tryAcquire(): boolean {
    if (this.active >= this.limit) return false;
    this.active++;
    return true;
  }

  release(): void {
    this.active = Math.max(0, this.active - 1);
  }
}

/** Everything a route handler needs; built once per server instance. */
export interface ServerContext {
  readonly engine: Engine;
  readonly tokenizer: ServerTokenizer;
  readonly modelName: string;
  readonly chatTemplate: ChatRenderer | null;
  readonly parsers: OutputParsers;
  /** Compiles grammars and makes per-choice constraints; null when the model has no vocab. */
  readonly grammar: GrammarService | null;
  readonly options: ServerOptions;
  readonly metrics: ServerMetrics;
  readonly limiter: ConcurrencyLimiter;
  /** Engine sequences (choices) in flight, against --max-pending-seqs. */
  readonly sequences: SequenceLimiter;
  readonly validation: ValidationContext;
  /** Unix seconds, reported as `created` of the model. */
  readonly startedAt: number;
}
