import { jsonType, validateJson } from './json-schema-lite.js';
import type { ScenarioTool } from './tool-scenario.js';

/** One tool call the model made, with everything the report says about it. */
export interface CallRecord {
  turn: number;
  name: string;
  rawArguments: string;
  /** Set when the arguments were not JSON. */
  parseError?: string;
  /** Schema violations, or "unknown tool". */
  schemaErrors: string[];
  /** Same name and same canonical arguments as an earlier call in the run. */
  repeated: boolean;
  /** How the argument shape moved away from this tool's first schema-valid call, per key. */
  drift: string[];
}

export const isMalformed = (c: CallRecord): boolean =>
  c.parseError !== undefined || c.schemaErrors.length > 0;

/** JSON with sorted keys, so key order never makes two calls look different. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : 1,
    );
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** `number[]`, `string`, `(number|string)[]`…: the shape a key's value has. */
export function shapeOf(v: unknown): string {
  if (!Array.isArray(v)) return jsonType(v);
  const inner = [...new Set(v.map(jsonType))].sort();
  if (inner.length === 0) return 'array';
  return inner.length === 1 ? `${inner[0]}[]` : `(${inner.join('|')})[]`;
}

/** Empty strings and arrays, and arrays of only zeros or empty strings. */
export function isDegenerate(v: unknown): boolean {
  if (v === '') return true;
  if (Array.isArray(v)) return v.length === 0 || v.every((x) => x === 0 || x === '');
  return false;
}

/** Per-key drift of `args` against the same tool's first schema-valid arguments. */
export function argumentDrift(
  first: Record<string, unknown>,
  args: Record<string, unknown>,
): string[] {
  const out: string[] = [];
  for (const key of new Set([...Object.keys(first), ...Object.keys(args)])) {
    if (!(key in args)) out.push(`${key}: dropped`);
    else if (!(key in first)) out.push(`${key}: added`);
    else if (shapeOf(first[key]) !== shapeOf(args[key]))
      out.push(`${key}: ${shapeOf(first[key])} -> ${shapeOf(args[key])}`);
    else if (!isDegenerate(first[key]) && isDegenerate(args[key])) out.push(`${key}: emptied`);
  }
  return out;
}

/** Stateful per run: remembers earlier calls for repeats and the drift baseline per tool. */
export class CallAnalyzer {
  private readonly seen = new Set<string>();
  private readonly firstArgs = new Map<string, Record<string, unknown>>();

  constructor(private readonly tools: readonly ScenarioTool[]) {}

  analyze(turn: number, name: string, rawArguments: string): CallRecord {
    const rec: CallRecord = {
      turn,
      name,
      rawArguments,
      schemaErrors: [],
      repeated: false,
      drift: [],
    };
    let args: unknown;
    try {
      args = JSON.parse(rawArguments === '' ? '{}' : rawArguments);
    } catch (e) {
      rec.parseError = (e as Error).message;
    }
    const key = `${name}\u0000${rec.parseError ? rawArguments : canonicalJson(args)}`;
    rec.repeated = this.seen.has(key);
    this.seen.add(key);
    const tool = this.tools.find((t) => t.name === name);
    if (!tool) rec.schemaErrors.push(`unknown tool "${name}"`);
    if (rec.parseError || !tool) return rec;
    rec.schemaErrors = validateJson(tool.parameters, args);
    if (jsonType(args) !== 'object') return rec;
    const obj = args as Record<string, unknown>;
    const first = this.firstArgs.get(name);
    if (first) rec.drift = argumentDrift(first, obj);
    else if (rec.schemaErrors.length === 0) this.firstArgs.set(name, obj);
    return rec;
  }
}
