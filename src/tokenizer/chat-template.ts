import { Template } from '@huggingface/jinja';

import { builtinM3Template } from './builtin-m3-template.js';
import { M3_TOKENS } from './minimax-m3-tokens.js';
import type { ChatTemplateSource } from './tokenizer-config.js';

export { builtinM3Template };

/** An OpenAI content part; only text parts can be rendered. */
export interface ContentPart {
  type: string;
  text?: string;
}

/** An OpenAI chat message as the template sees it (extra fields are passed through). */
export interface ChatMessage {
  role: string;
  content?: string | readonly ContentPart[] | null;
  name?: string;
  tool_call_id?: string;
  tool_calls?: readonly {
    id?: string;
    type?: string;
    function: { name: string; arguments: unknown };
  }[];
  [extra: string]: unknown;
}

export interface RenderChatOptions {
  /** OpenAI `tools`; an empty list renders as no tools. */
  tools?: readonly unknown[];
  /** Append the assistant turn opener (default true). */
  addGenerationPrompt?: boolean;
  /** `chat_template_kwargs`, e.g. `{ thinking_mode: 'enabled' }`; visible as template variables. */
  kwargs?: Readonly<Record<string, unknown>>;
  bosToken?: string;
  eosToken?: string;
}

export interface RenderedChat {
  prompt: string;
  /**
   * The prompt ends with the think opener `<mm:think>`: generation starts inside reasoning,
   * which the reasoning parser must be told (`prefilledOpener`).
   */
  prefilledOpener: boolean;
}

/**
 * Picks the template text: a single template as is; from a list of named templates `tool_use`
 * when tools are given and it exists, else `default`, else the first; the built-in M3 template
 * when the model has none.
 */
export function selectChatTemplate(
  source: ChatTemplateSource | undefined,
  opts: { hasTools?: boolean } = {},
): string {
  if (source === undefined || source.length === 0) return builtinM3Template;
  if (typeof source === 'string') return source;
  const named = (name: string): string | undefined => source.find((t) => t.name === name)?.template;
  return (
    (opts.hasTools ? named('tool_use') : undefined) ??
    named('default') ??
    source[0]?.template ??
    builtinM3Template
  );
}

/**
 * Renders chat messages to the prompt text with a Jinja chat template (HF semantics).
 * Content part lists are joined to text and tool-call arguments given as JSON strings are
 * parsed to objects first, as HF templates expect. Throws on non-text content parts and on
 * template errors (including the template's own `raise_exception`).
 */
export function renderChat(
  template: string,
  messages: readonly ChatMessage[],
  opts: RenderChatOptions = {},
): RenderedChat {
  const prompt = compile(template).render({
    ...opts.kwargs,
    messages: messages.map(templateMessage),
    tools: opts.tools && opts.tools.length > 0 ? opts.tools : undefined,
    add_generation_prompt: opts.addGenerationPrompt ?? true,
    bos_token: opts.bosToken ?? '',
    eos_token: opts.eosToken ?? '',
  });
  return { prompt, prefilledOpener: endsWithThinkOpener(prompt) };
}

/** True when generation continues a prompt that opened a reasoning block. */
export function endsWithThinkOpener(prompt: string): boolean {
  return prompt.trimEnd().endsWith(M3_TOKENS.thinkOpen);
}

const compiled = new Map<string, Template>();

function compile(source: string): Template {
  let t = compiled.get(source);
  if (!t) {
    t = new Template(source);
    // Models ship one or two templates; the bound keeps odd clients from growing the cache.
    if (compiled.size > 16) compiled.clear();
    compiled.set(source, t);
  }
  return t;
}

function templateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { ...m, content: contentText(m.content) };
  if (m.tool_calls) {
    out['tool_calls'] = m.tool_calls.map((tc) => ({
      ...tc,
      function: { ...tc.function, arguments: parseArguments(tc.function.arguments) },
    }));
  }
  return out;
}

function contentText(content: ChatMessage['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((p) => {
      if (p.type !== 'text' || typeof p.text !== 'string') {
        throw new Error(`unsupported content part type: ${p.type}`);
      }
      return p.text;
    })
    .join('\n');
}

function parseArguments(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return args;
  }
}
