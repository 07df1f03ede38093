import type {
  GrammarConstraint,
  GrammarSpec,
  ReasoningStart,
} from '../../engine/grammar/grammar-service.js';
import { GrammarError } from '../../engine/grammar/grammar-checker.js';
import { endsWithThinkOpener } from '../../tokenizer/chat-template.js';
import { badRequest } from '../errors.js';
import type { ServerContext } from '../server-context.js';

/** A grammar a request asks for, and the request field to blame when it is invalid. */
export interface ConstraintPlan {
  readonly spec: GrammarSpec;
  /** e.g. `response_format.json_schema.schema` or `tools`. */
  readonly param: string;
  readonly reasoning: ReasoningStart;
}

/** The plan for a request's `response_format` (null for text). */
export function responseFormatPlan(
  spec: GrammarSpec | null,
  reasoning: ReasoningStart,
): ConstraintPlan | null {
  if (!spec) return null;
  const param =
    spec.kind === 'json_schema' ? 'response_format.json_schema.schema' : 'response_format';
  return { spec, param, reasoning };
}

/** Where a chat reply starts relative to reasoning, given the rendered prompt. */
export function chatReasoningStart(ctx: ServerContext, promptText: string): ReasoningStart {
  if (!ctx.parsers.reasoning) return 'none';
  return endsWithThinkOpener(promptText) ? 'inside' : 'may-think';
}

/**
 * One constraint per choice (each matcher tracks its own sequence), compiled once per grammar.
 * An invalid grammar is a 400 naming `plan.param`. Call `dispose` on each once its choice ends.
 */
export async function choiceConstraints(
  ctx: ServerContext,
  plan: ConstraintPlan | null,
  n: number,
): Promise<GrammarConstraint[] | null> {
  if (!plan) return null;
  const grammar = ctx.grammar;
  if (!grammar)
    throw badRequest(
      `${plan.param} needs structured outputs, which this model's tokenizer lacks`,
      plan.param,
    );
  const out: GrammarConstraint[] = [];
  try {
    for (let i = 0; i < n; i++) out.push(await grammar.constraint(plan.spec, plan.reasoning));
  } catch (e) {
    for (const c of out) c.dispose();
    if (e instanceof GrammarError)
      throw badRequest(`${plan.param} is invalid: ${e.message}`, plan.param);
    throw e;
  }
  return out;
}
