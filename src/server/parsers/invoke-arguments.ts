import {
  castLeaf,
  childSchema,
  isStringOnly,
  kindOf,
  type JsonSchema,
  type ValueKind,
} from './tool-schema.js';

/** The text is not well-formed M3 tool-call syntax. */
export class M3SyntaxError extends Error {}

interface Frame {
  tag: string;
  schema: JsonSchema | undefined;
  kind: ValueKind;
  text: string;
  value?: Record<string, unknown> | unknown[];
  /** Top-level string parameter whose text is streamed as it arrives. */
  live: boolean;
}

/**
 * Builds the JSON arguments of one `NS<invoke>` from its element events and emits them as
 * fragments whose concatenation is the final compact JSON object.
 *
 * Streaming policy: a string-only top-level parameter streams its text as it arrives; any other
 * parameter is emitted whole once the next sibling (or `NS</invoke>`) shows it is not repeated,
 * so a key repeated back to back still becomes a list. Nested values are built whole.
 */
export class InvokeArguments {
  private readonly stack: Frame[] = [];
  private pending: { key: string; value: unknown } | undefined;
  private keysWritten = 0;
  private liveOpen = false;

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
    if (top.live) this.emit(JSON.stringify(raw).slice(1, -1));
    if (top.kind === 'unknown' && raw.trim() !== '') top.kind = 'leaf';
  }

  open(tag: string): void {
    const top = this.stack[this.stack.length - 1];
    if (!top) return this.openParameter(tag);
    if (top.kind === 'leaf') throw new M3SyntaxError(`element <${tag}> inside a value`);
    if (top.kind === 'unknown') top.kind = tag === 'item' ? 'array' : 'object';
    top.value ??= top.kind === 'array' ? [] : {};
    const index = Array.isArray(top.value) ? top.value.length : 0;
    const schema = childSchema(top.schema, tag, index);
    this.stack.push({ tag, schema, kind: kindOf(schema), text: '', live: false });
  }

  /** Returns true when this closed the invoke itself (the arguments are complete). */
  close(tag: string): boolean {
    const top = this.stack.pop();
    if (!top) {
      if (tag !== 'invoke') throw new M3SyntaxError(`unexpected </${tag}> in invoke`);
      this.flushPending();
      this.emit('}');
      return true;
    }
    if (top.tag !== tag) throw new M3SyntaxError(`</${tag}> closes <${top.tag}>`);
    const value = finalValue(top);
    const parent = this.stack[this.stack.length - 1];
    if (parent) assignChild(parent.value!, top.tag, value);
    else if (top.live) {
      this.emit('"');
      this.liveOpen = false;
    } else if (this.pending?.key === top.tag) {
      this.pending.value = appendRepeat(this.pending.value, value);
    } else {
      this.flushPending();
      this.pending = { key: top.tag, value };
    }
    return false;
  }

  /** Ends the JSON where it stands (malformed or cut-off output) so the fragments still parse. */
  abort(): void {
    if (this.liveOpen) this.emit('"');
    this.liveOpen = false;
    this.flushPending();
    this.emit('}');
  }

  private openParameter(tag: string): void {
    if (this.pending && this.pending.key !== tag) this.flushPending();
    const schema = childSchema(this.schema, tag, 0);
    const live = isStringOnly(schema) && this.pending === undefined;
    if (live) {
      this.writeKey(tag);
      this.emit('"');
      this.liveOpen = true;
    }
    this.stack.push({ tag, schema, kind: kindOf(schema), text: '', live });
  }

  private flushPending(): void {
    if (!this.pending) return;
    this.writeKey(this.pending.key);
    this.emit(JSON.stringify(this.pending.value));
    this.pending = undefined;
  }

  private writeKey(key: string): void {
    this.emit(`${this.keysWritten > 0 ? ',' : ''}${JSON.stringify(key)}:`);
    this.keysWritten++;
  }
}

function finalValue(f: Frame): unknown {
  if (f.kind === 'object') return f.value ?? {};
  if (f.kind === 'array') return f.value ?? [];
  return castLeaf(f.text, f.schema);
}

function assignChild(
  parent: Record<string, unknown> | unknown[],
  tag: string,
  value: unknown,
): void {
  if (Array.isArray(parent)) parent.push(value);
  else if (tag in parent) parent[tag] = appendRepeat(parent[tag], value);
  else parent[tag] = value;
}

/** A repeated key becomes a list (appended to when the first value already is one). */
function appendRepeat(existing: unknown, value: unknown): unknown[] {
  return Array.isArray(existing) ? [...existing, value] : [existing, value];
}
