import { arithmeticContent, arithmeticProblem, arithmeticReasoning } from './arithmetic.js';
import { chatExchange } from './chat.js';
import {
  assistantMessage,
  renderCompletion,
  renderPrompt,
  type AssistantTurn,
  type ChatMessage,
  type ToolCall,
  type ToolSpec,
} from './m3-format.js';
import { STOP_RATE_PROMPT_SUFFIX } from '../eval/stop-rate.js';
import type { Rng } from './rng.js';
import { TOOLS } from './tool-catalog.js';

/** Instructions that eval tools append to a question (`moeserve eval stop-rate` adds the first). */
export const QUESTION_SUFFIXES = [
  STOP_RATE_PROMPT_SUFFIX,
  '\n\nShow your steps.',
  ' Answer with a number.',
];

export type ConversationKind = 'arithmetic' | 'tool' | 'chat';

/** One generated conversation, up to the assistant turn that answers it. */
export interface Conversation {
  kind: ConversationKind;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** What the assistant says next (for `tool`: the call). */
  turn: AssistantTurn;
  /** Arithmetic only: the number after `####`. */
  answer?: number;
  /** Tool only: the tool's JSON result and the assistant's answer that uses it. */
  toolResult?: string;
  finalTurn?: AssistantTurn;
}

/** A training pair: the prompt the server renders and the text the model should generate. */
export interface TrainingSample {
  kind: string;
  prompt: string;
  completion: string;
}

const SYSTEM_PROMPTS = [
  'You are moeserve-tiny, a helpful assistant.',
  'You are a helpful assistant. Answer briefly.',
  'You are a careful math tutor.',
  'You are a friendly assistant that can use tools.',
];

/**
 * An eval instruction suffix for 30% of the questions, chosen by a hash of the question so that
 * the random stream (and with it every held-out set) is the same as without suffixes.
 */
function suffixFor(question: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < question.length; i++) h = Math.imul(h ^ question.charCodeAt(i), 0x01000193);
  const r = (h >>> 0) % 100;
  return r < 30 ? (QUESTION_SUFFIXES[r % QUESTION_SUFFIXES.length] ?? '') : '';
}

function arithmeticTurn(rng: Rng): { user: string; turn: AssistantTurn; answer: number } {
  const p = arithmeticProblem(rng);
  return {
    user: p.question + suffixFor(p.question),
    turn: { reasoning: arithmeticReasoning(p), content: arithmeticContent(p) },
    answer: p.answer,
  };
}

function chatTurn(rng: Rng): { user: string; turn: AssistantTurn } {
  const c = chatExchange(rng);
  return { user: c.user, turn: { reasoning: c.reasoning, content: c.content } };
}

/** The opening messages: an optional system prompt and an optional earlier exchange. */
function opening(rng: Rng): ChatMessage[] {
  const msgs: ChatMessage[] = [];
  if (rng.chance(0.2)) msgs.push({ role: 'system', content: rng.pick(SYSTEM_PROMPTS) });
  if (rng.chance(0.15)) {
    const prior = rng.chance(0.5) ? arithmeticTurn(rng) : chatTurn(rng);
    msgs.push({ role: 'user', content: prior.user }, assistantMessage(prior.turn, 'call_0'));
  }
  return msgs;
}

function toolList(rng: Rng, needed: ToolSpec): ToolSpec[] {
  const others = rng.shuffle(TOOLS.map((t) => t.spec).filter((s) => s !== needed));
  return rng.shuffle([needed, ...others.slice(0, rng.int(0, 2))]);
}

function toolConversation(rng: Rng): Conversation {
  const def = rng.pick(TOOLS);
  const req = def.make(rng);
  const call: ToolCall = { name: def.spec.function.name, arguments: req.args };
  return {
    kind: 'tool',
    messages: [...opening(rng), { role: 'user', content: req.user }],
    tools: toolList(rng, def.spec),
    turn: { reasoning: req.why, content: '', toolCalls: [call] },
    toolResult: JSON.stringify(req.result),
    finalTurn: { reasoning: `The ${call.name} tool answered.`, content: req.answer },
  };
}

/** One conversation of a kind drawn from the training mixture. */
export function conversation(rng: Rng): Conversation {
  const r = rng.next();
  if (r < 0.3) return toolConversation(rng);
  const tools = r < 0.35 ? [rng.pick(TOOLS).spec] : undefined;
  const msgs = opening(rng);
  if (r < 0.45) {
    const c = chatTurn(rng);
    return {
      kind: 'chat',
      messages: [...msgs, { role: 'user', content: c.user }],
      tools,
      turn: c.turn,
    };
  }
  const a = arithmeticTurn(rng);
  const conv: Conversation = {
    kind: 'arithmetic',
    messages: [...msgs, { role: 'user', content: a.user }],
    turn: a.turn,
    answer: a.answer,
  };
  if (tools) conv.tools = tools;
  return conv;
}

/** The messages after the tool call was made and answered (the second stage of `tool`). */
export function afterToolMessages(c: Conversation): ChatMessage[] {
  if (c.toolResult === undefined) throw new Error('afterToolMessages: not a tool conversation');
  return [
    ...c.messages,
    assistantMessage(c.turn, 'call_1'),
    { role: 'tool', content: c.toolResult, tool_call_id: 'call_1-0' },
  ];
}

/** The training pairs of one conversation (two for a tool conversation). */
export function trainingSamples(c: Conversation): TrainingSample[] {
  const first = {
    kind: c.kind === 'tool' ? 'tool-call' : c.kind,
    prompt: renderPrompt(c.messages, c.tools),
    completion: renderCompletion(c.turn),
  };
  if (c.kind !== 'tool' || !c.finalTurn) return [first];
  return [
    first,
    {
      kind: 'tool-answer',
      prompt: renderPrompt(afterToolMessages(c), c.tools),
      completion: renderCompletion(c.finalTurn),
    },
  ];
}

/**
 * The last user message without an eval instruction suffix: the key that keeps held-out
 * questions out of training, and the question of the GSM8K-style file.
 */
export function questionOf(c: Conversation): string {
  for (let i = c.messages.length - 1; i >= 0; i--) {
    const m = c.messages[i];
    if (m?.role !== 'user') continue;
    const q = m.content ?? '';
    const suffix = QUESTION_SUFFIXES.find((x) => q.endsWith(x));
    return suffix ? q.slice(0, -suffix.length) : q;
  }
  return '';
}
