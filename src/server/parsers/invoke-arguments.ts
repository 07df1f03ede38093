import { castLeaf, childSchema, kindOf, type JsonSchema, type ValueKind } from './tool-schema.js';

/** The text is not well-formed M3 tool-call syntax. */
export class M3SyntaxError extends Error {}

/** An object value: a Map keeps the model's key order (a plain object would put "1" first). */
type ObjectValue = Map<string, unknown>;

interface Frame {
  tag: string;
  schema: JsonSchema | undefined;
  kind: ValueKind;
  text: string;
  value?: ObjectValue | unknown[];
}

/**
 * Builds the JSON arguments of one `NS<invoke>` from its element events. `{` is emitted at once
 * and the rest of the object when `NS</invoke>` closes it: a key may be repeated anywhere in the
 * invoke, at any depth and for any schema type, and every repeat joins the first occurrence as a
 * list (shared/design/minimax-m3.md §4; SGLang's MinimaxM3Detector assigns children this way),
 * so no parameter is final before the invoke is. The fragments always join into compact JSON.
 */
export class InvokeArguments {
  private readonly stack: Frame[] = [];
  private readonly root: ObjectValue = new Map();

  constructor(
    private readonly schema: JsonSchema | undefined,
    private readonly emit: (fragment: string) => void,
  ) {
    emit('{');
  }

  text(raw: string): void {
    const top = this.stack[this.stack.length - 1];
    if (!top || top.kind === 'object' || top.kind === 'array') {
      if (raw.trim() !== '') throw new M3SyntaxError(`unexpected text: ${raw.slice(0, 40)}`);
      return;
    }
    top.text += raw;
    if (top.kind === 'unknown' && raw.trim() !== '') top.kind = 'leaf';
  }

  open(tag: string): void {
    const top = this.stack[this.stack.length - 1];
    if (!top) {
      const schema = childSchema(this.schema, tag, 0);
      this.stack.push({ tag, schema, kind: kindOf(schema), text: '' });
      return;
    }
    if (top.kind === 'leaf') throw new M3SyntaxError(`element <${tag}> inside a value`);
    if (top.kind === 'unknown') top.kind = tag === 'item' ? 'array' : 'object';
    top.value ??= top.kind === 'array' ? [] : new Map();
    const index = Array.isArray(top.value) ? top.value.length : 0;
    const schema = childSchema(top.schema, tag, index);
    this.stack.push({ tag, schema, kind: kindOf(schema), text: '' });
  }

  /** Returns true when this closed the invoke itself (the arguments are complete). */
  close(tag: string): boolean {
    if (this.stack.length === 0) {
      if (tag !== 'invoke') throw new M3SyntaxError(`unexpected </${tag}> in invoke`);
      this.finishObject();
      return true;
    }
    if (this.stack[this.stack.length - 1]!.tag !== tag)
      throw new M3SyntaxError(`</${tag}> closes <${this.stack[this.stack.length - 1]!.tag}>`);
    this.popFrame();
    return false;
  }

  private popFrame(): void {
    const frame = this.stack.pop()!;
    const parent = this.stack[this.stack.length - 1];
    assignChild(parent ? parent.value! : this.root, frame.tag, finalValue(frame));
  }

  private finishObject(): void {
    this.emit(jsonText(this.root).slice(1));
  }
}

function finalValue(f: Frame): unknown {
  if (f.kind === 'object') return f.value ?? new Map();
  if (f.kind === 'array') return f.value ?? [];
  return castLeaf(f.text, f.schema);
}

/** Array entries append; a repeated object key becomes a list (appended to when one already). */
function assignChild(parent: ObjectValue | unknown[], tag: string, value: unknown): void {
  if (Array.isArray(parent)) {
    parent.push(value);
    return;
  }
  if (!parent.has(tag)) {
    parent.set(tag, value);
    return;
  }
  const existing = parent.get(tag);
  if (Array.isArray(existing)) existing.push(value);
  else parent.set(tag, [existing, value]);
}

/** Compact JSON of a parsed value: Maps in insertion order, bigints as their exact digits. */
export function jsonText(v: unknown): string {
  if (v instanceof Map) {
    const parts = [...(v as ObjectValue)].map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`);
    return `{${parts.join(',')}}`;
  }
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (typeof v === 'bigint') return v.toString();
  return JSON.stringify(v) ?? 'null';
}
