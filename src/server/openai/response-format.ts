import type { GrammarSpec } from '../../engine/grammar/grammar-service.js';
import { describe, type FieldReader } from './field-reader.js';

/**
 * Reads OpenAI's `response_format`: `{type: "text"}` (null), `{type: "json_object"}`, or
 * `{type: "json_schema", json_schema: {name, schema, strict?, description?}}` (vLLM and SGLang
 * take the same shape). The schema is checked when compiled; see `choiceConstraints`.
 */
export function readResponseFormat(r: FieldReader): GrammarSpec | null {
  const rf = r.child('response_format', true);
  if (rf === undefined) return null;
  const type = rf.requiredString('type');
  if (type === 'text') return null;
  if (type === 'json_object') return { kind: 'json_object' };
  if (type !== 'json_schema')
    rf.fail('type', `must be "text", "json_object" or "json_schema", got ${describe(type)}`);
  const js = rf.child('json_schema');
  js.string('name');
  js.string('description');
  js.boolean('strict');
  const schema = js.raw('schema');
  if (schema === undefined) js.fail('schema', 'is required');
  if (typeof schema !== 'boolean' && js.object('schema') === undefined)
    js.fail('schema', 'is required');
  return { kind: 'json_schema', schema: JSON.stringify(schema) };
}
