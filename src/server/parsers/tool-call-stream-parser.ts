import { randomUUID } from 'node:crypto';

import { InvokeArguments, M3SyntaxError } from './invoke-arguments.js';
import { M3TagLexer, type TagEvent } from './m3-tag-lexer.js';
import type { JsonSchema } from './tool-schema.js';

/** An OpenAI function tool (`tools[i]` of a chat request). */
export interface ToolSpec {
  type?: string;
  function: { name: string; description?: string; parameters?: unknown };
}

/**
 * A piece of one tool call. The first delta of a call carries `id`, `type` and `name` (with
 * `arguments: ''`); later ones carry JSON `arguments` fragments. Concatenating a call's
 * fragments gives its complete compact JSON arguments.
 */
export interface ToolCallDelta {
  /** Position of the call in this output (0, 1, ...), across all blocks. */
  index: number;
  id?: string;
  type?: 'function';
  name?: string;
  arguments?: string;
}

/** What one `feed`/`finish` produced: plain content, and tool-call deltas in order. */
export interface ToolCallOutput {
  content: string;
  calls: ToolCallDelta[];
}

export interface ToolCallParserOptions {
  /** Call id for the call at `index` (default `call_` + 24 random hex digits). */
  makeId?: (index: number) => string;
}

type State = 'text' | 'block' | 'invoke' | 'skip';

const defaultId = (): string => `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`;

/**
 * Streaming `minimax-m3` tool-call parser: feed content deltas (after reasoning is split off),
 * get content deltas and tool-call deltas. Text that might begin `NS<tool_call>` is held back,
 * and so is each call block until its `NS</tool_call>`: only then is it known to be well-formed
 * (a malformed or unterminated block is content, verbatim) and every repeated key joined into
 * a list. Its calls then go out as a name delta and an arguments delta each. So the stream gives
 * exactly {@link parseToolCalls}' content and calls for any way of cutting the text into deltas,
 * malformed text included. A call to a tool that is not in `tools` is dropped.
 */
export class ToolCallStreamParser {
  private readonly lexer = new M3TagLexer();
  private readonly makeId: (index: number) => string;
  private state: State = 'text';
  private args: InvokeArguments | undefined;
  private nextIndex = 0;
  private blockStartIndex = 0;
  private blockRaw = '';
  private blockCalls: ToolCallDelta[] = [];
  private out: ToolCallOutput = { content: '', calls: [] };

  constructor(
    private readonly tools: readonly ToolSpec[] = [],
    opts: ToolCallParserOptions = {},
  ) {
    this.makeId = opts.makeId ?? defaultId;
  }

  feed(text: string): ToolCallOutput {
    for (const ev of this.lexer.push(text)) this.onEvent(ev);
    return this.take();
  }

  /** Flushes held-back text and closes whatever the output left open. */
  finish(): ToolCallOutput {
    for (const ev of this.lexer.end()) this.onEvent(ev);
    if (this.state === 'block' || this.state === 'invoke') this.dropBlock();
    this.state = 'text';
    this.args = undefined;
    return this.take();
  }

  private take(): ToolCallOutput {
    const out = this.out;
    this.out = { content: '', calls: [] };
    return out;
  }

  private onEvent(ev: TagEvent): void {
    if (this.state === 'text') {
      if (ev.kind === 'open' && ev.name === 'tool_call') this.openBlock(ev.raw);
      else this.out.content += ev.raw;
      return;
    }
    if (this.state === 'skip') {
      this.out.content += ev.raw;
      if (ev.kind === 'close' && ev.name === 'tool_call') this.state = 'text';
      return;
    }
    this.blockRaw += ev.raw;
    try {
      if (this.state === 'invoke') this.onInvokeEvent(ev);
      else this.onBlockEvent(ev);
    } catch (err) {
      if (!(err instanceof M3SyntaxError)) throw err;
      this.fail(ev);
    }
  }

  private openBlock(raw: string): void {
    this.state = 'block';
    this.blockRaw = raw;
    this.blockCalls = [];
    this.blockStartIndex = this.nextIndex;
  }

  private onBlockEvent(ev: TagEvent): void {
    if (ev.kind === 'text' && ev.raw.trim() === '') return;
    if (ev.kind === 'close' && ev.name === 'tool_call') {
      this.out.calls.push(...this.blockCalls);
      this.blockCalls = [];
      this.state = 'text';
      return;
    }
    if (ev.kind !== 'open' || ev.name !== 'invoke') {
      throw new M3SyntaxError(`expected an invoke, got ${ev.raw.slice(0, 40)}`);
    }
    const name = /name\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(ev.attrs);
    const fnName = (name?.[1] ?? name?.[2] ?? '').trim();
    if (fnName === '') throw new M3SyntaxError('invoke without a name');
    const tool = this.tools.find((t) => t.function.name === fnName);
    if (!tool) {
      // A call to a tool the request did not offer is dropped (SGLang does the same), but its
      // body must still be well-formed for the block to count as calls.
      this.args = new InvokeArguments(undefined, () => {});
    } else {
      const index = this.nextIndex++;
      this.emit({ index, id: this.makeId(index), type: 'function', name: fnName, arguments: '' });
      this.args = new InvokeArguments(schemaOf(tool), (frag) =>
        this.emit({ index, arguments: frag }),
      );
    }
    this.state = 'invoke';
  }

  private onInvokeEvent(ev: TagEvent): void {
    const args = this.args!;
    if (ev.kind === 'text') args.text(ev.raw);
    else if (ev.kind === 'open') args.open(ev.name);
    else if (args.close(ev.name)) {
      this.args = undefined;
      this.state = 'block';
    }
  }

  private fail(ev: TagEvent): void {
    this.dropBlock();
    this.args = undefined;
    // The rest of the block, up to its NS</tool_call>, is content as well.
    this.state = ev.kind === 'close' && ev.name === 'tool_call' ? 'text' : 'skip';
  }

  /** The block was not a valid call block, so it is content after all. */
  private dropBlock(): void {
    this.out.content += this.blockRaw;
    this.blockCalls = [];
    this.nextIndex = this.blockStartIndex;
  }

  /** Appends a delta, merging argument fragments of the same call. */
  private emit(delta: ToolCallDelta): void {
    const target = this.blockCalls;
    const last = target[target.length - 1];
    if (delta.name === undefined && last?.index === delta.index && last.name === undefined) {
      last.arguments = (last.arguments ?? '') + (delta.arguments ?? '');
    } else target.push(delta);
  }
}

function schemaOf(tool: ToolSpec): JsonSchema | undefined {
  const params = tool.function.parameters;
  return params !== null && typeof params === 'object' ? (params as JsonSchema) : undefined;
}
