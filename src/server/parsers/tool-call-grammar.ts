import { M3_TOKENS } from '../../tokenizer/minimax-m3-tokens.js';
import { toM3Xml } from './tool-call-formatter.js';
import type { ToolSpec } from './tool-call-stream-parser.js';
import { type JsonSchema, schemaTypes } from './tool-schema.js';

/**
 * The EBNF grammar (xgrammar's dialect) of a MiniMax-M3 tool-call block whose calls follow
 * the tools' JSON Schemas, exactly as `formatToolCalls` writes them and the tool-call parser
 * reads them back:
 *
 *   NS<tool_call>\n (NS<invoke name="f">{params}NS</invoke>\n)+ NS</tool_call>
 *
 * with each parameter `NS<key>value NS</key>` in schema order (required ones always, optional
 * ones maybe, no others). Values follow their schema: enum/const literals, integers and
 * numbers (up to 20 digits each side), true/false, null where allowed, nested objects as
 * nested elements, arrays as `NS<item>` elements (minItems/maxItems kept), anyOf/oneOf as
 * alternatives; strings are any text without `]<` (which would start a tag) that does not end
 * in `]`. String formats, patterns and numeric ranges are not enforced.
 *
 * `name` set: exactly one call, to that function; otherwise one or more calls to any tool.
 */
export function toolCallGrammar(tools: readonly ToolSpec[], name?: string): string {
  const g = new GrammarBuilder();
  const chosen = name ? tools.filter((t) => t.function.name === name) : tools;
  if (chosen.length === 0) throw new Error(`no tool to call${name ? ` named "${name}"` : ''}`);
  const invokes = chosen.map((t) => {
    const params = g.properties(asObject(t.function.parameters));
    const open = lit(`${NS}<invoke name="${t.function.name}">`);
    return g.rule('invoke', `${open} ${params} ${lit(`${NS}</invoke>\n`)}`);
  });
  const call = g.rule('call', invokes.join(' | '));
  const calls = name ? call : `${call}+`;
  g.root(`${lit(`${NS}<tool_call>\n`)} ${calls} ${lit(`${NS}</tool_call>`)}`);
  return g.toString();
}

const NS = M3_TOKENS.ns;
const MAX_DIGITS = 20;

const BASE_RULES = [
  // A run of `]` must be followed by a character that is neither `<` nor `]`.
  `str ::= ([^\\]] | "]"+ [^<\\]])*`,
  `int ::= "-"? [0-9]{1,${MAX_DIGITS}}`,
  `num ::= "-"? [0-9]{1,${MAX_DIGITS}} ("." [0-9]{1,${MAX_DIGITS}})?`,
  `bool ::= "true" | "false"`,
];

class GrammarBuilder {
  private readonly rules: string[] = [];
  private count = 0;

  rule(prefix: string, body: string): string {
    const name = `${prefix}_${this.count++}`;
    this.rules.push(`${name} ::= ${body === '' ? '""' : body}`);
    return name;
  }

  root(body: string): void {
    this.rules.unshift(`root ::= ${body}`);
  }

  /** The elements of an object schema's properties, in order; '""' when it has none. */
  properties(schema: JsonSchema | undefined): string {
    const props = asObject(schema?.['properties']);
    if (!props) return '""';
    const required = new Set(asStrings(schema?.['required']));
    const parts = Object.entries(props).map(([key, sub]) => {
      const value = this.value(asObject(sub));
      const el = this.rule('param', `${lit(`${NS}<${key}>`)} ${value} ${lit(`${NS}</${key}>`)}`);
      return required.has(key) ? el : `${el}?`;
    });
    return parts.length > 0 ? parts.join(' ') : '""';
  }

  /** A rule name (or literal alternatives) for one value of `schema`. */
  value(schema: JsonSchema | undefined): string {
    if (!schema) return 'str';
    const literals = schema['enum'] ?? ('const' in schema ? [schema['const']] : undefined);
    if (Array.isArray(literals) && literals.length > 0) {
      return this.rule('enum', literals.map((v) => lit(toM3Xml(v))).join(' | '));
    }
    const branches = [schema['anyOf'], schema['oneOf']].find(Array.isArray) as
      unknown[] | undefined;
    if (branches && branches.length > 0) {
      return this.rule('any', branches.map((b) => this.value(asObject(b))).join(' | '));
    }
    const types = schemaTypes(schema);
    if (types.size === 0) return schema['properties'] ? this.object(schema) : 'str';
    return this.rule('value', [...types].map((t) => this.typed(t, schema)).join(' | '));
  }

  private typed(type: string, schema: JsonSchema): string {
    switch (type) {
      case 'string':
        return 'str';
      case 'integer':
        return 'int';
      case 'number':
        return 'num';
      case 'boolean':
        return 'bool';
      case 'null':
        return lit('null');
      case 'object':
        return this.object(schema);
      case 'array':
        return this.array(schema);
      default:
        return 'str';
    }
  }

  private object(schema: JsonSchema): string {
    return this.rule('object', this.properties(schema));
  }

  private array(schema: JsonSchema): string {
    const item = this.value(asObject(schema['items']));
    const el = this.rule('item', `${lit(`${NS}<item>`)} ${item} ${lit(`${NS}</item>`)}`);
    const min = nonNegative(schema['minItems']) ?? 0;
    const max = nonNegative(schema['maxItems']);
    if (max === undefined) return min === 0 ? `${el}*` : `${el}{${min},}`;
    return `${el}{${min},${Math.max(min, max)}}`;
  }

  toString(): string {
    return [...this.rules, ...BASE_RULES].join('\n');
  }
}

/** An EBNF string literal. */
function lit(text: string): string {
  const escaped = text
    .replaceAll('\\', '\\\\')
    .replaceAll('"', '\\"')
    .replaceAll('\n', '\\n')
    .replaceAll('\r', '\\r')
    .replaceAll('\t', '\\t');
  return `"${escaped}"`;
}

function asObject(v: unknown): JsonSchema | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonSchema) : undefined;
}

function asStrings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function nonNegative(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}
