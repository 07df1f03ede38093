import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatToolCalls } from '../server/parsers/tool-call-formatter.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import { builtinM3Template, renderChat } from '../tokenizer/chat-template.js';

/**
 * training/m3_render.py renders the tiny model's training text in Python; the server renders
 * prompts with the built-in template and formats tool calls in TypeScript. The fixture
 * (`python3 training/gen_data.py --render-cases training/fixtures/render-cases.json`) holds the
 * Python text for generated tool loops; both sides must agree character for character.
 */
interface Case {
  messages: ChatMessage[];
  tools: unknown[];
  prompt: string;
  calls: { name: string; arguments: Record<string, unknown> }[];
  callText: string;
}

const cases = JSON.parse(
  readFileSync(new URL('../../training/fixtures/render-cases.json', import.meta.url), 'utf8'),
) as Case[];

describe('Python training renderer', () => {
  it('has cases with history, tool results and nested arguments', () => {
    expect(cases.length).toBeGreaterThan(20);
    expect(cases.some((c) => c.messages.some((m) => m.role === 'tool'))).toBe(true);
    expect(cases.some((c) => c.callText.includes('<item>'))).toBe(true);
  });

  it('renders prompts exactly as the server template does', () => {
    for (const c of cases) {
      expect(renderChat(builtinM3Template, c.messages, { tools: c.tools }).prompt).toBe(c.prompt);
    }
  });

  it('writes tool calls exactly as the server formatter does', () => {
    for (const c of cases.filter((x) => x.calls.length > 0)) {
      expect(formatToolCalls(c.calls)).toBe(c.callText);
    }
  });
});
