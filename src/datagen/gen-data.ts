import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import {
  afterToolMessages,
  conversation,
  questionOf,
  trainingSamples,
  type Conversation,
} from './dataset.js';
import { renderPrompt } from './m3-format.js';
import { M3_CHAT_TEMPLATE } from './m3-format.js';
import { Rng } from './rng.js';

export interface GenDataOptions {
  outDir: string;
  seed: number;
  /** Training conversations (a tool conversation gives two samples). */
  numTrain: number;
  /** Held-out conversations of each kind (arithmetic, tool); chat gets a fifth of it. */
  numHeldout: number;
}

export interface GenDataManifest {
  seed: number;
  numTrainConversations: number;
  trainSamplesByKind: Record<string, number>;
  heldoutByKind: Record<string, number>;
  files: string[];
}

/** Held-out conversations: `n` arithmetic (question only), `n` tool, `n/5` chat. */
export function heldoutConversations(rng: Rng, n: number): Conversation[] {
  const want: Record<string, number> = { arithmetic: n, tool: n, chat: Math.ceil(n / 5) };
  const out: Conversation[] = [];
  const seen = new Set<string>();
  while (Object.values(want).some((v) => v > 0)) {
    const c = conversation(rng);
    const left = want[c.kind] ?? 0;
    const q = questionOf(c);
    if (left <= 0 || (c.kind !== 'chat' && seen.has(q))) continue;
    // Held-out arithmetic is the bare question: the eval tools add their own instructions.
    if (c.kind === 'arithmetic') c.messages = [{ role: 'user', content: q }];
    if (c.kind === 'arithmetic' || c.kind === 'chat') delete c.tools;
    seen.add(q);
    want[c.kind] = left - 1;
    out.push(c);
  }
  return out;
}

/** One held-out record: {kind, messages, tools?, answer, ...} for the eval tools. */
export function heldoutRecord(c: Conversation): Record<string, unknown> {
  const rec: Record<string, unknown> = { kind: c.kind, messages: c.messages };
  if (c.tools) rec['tools'] = c.tools;
  if (c.kind === 'arithmetic') {
    rec['answer'] = `${c.turn.reasoning}\n#### ${String(c.answer)}`;
    rec['answer_number'] = c.answer;
  } else if (c.kind === 'tool') {
    rec['answer'] = c.turn.toolCalls?.[0];
    rec['tool_result'] = c.toolResult;
    rec['final_answer'] = c.finalTurn?.content;
  } else {
    rec['answer'] = c.turn.content;
  }
  return rec;
}

/**
 * Rendered prompts of the held-out set for training/evaluate.py (the PyTorch-side quality check):
 * one record per stage, the tool-answer stage after the expected call and its result.
 */
export function heldoutPrompts(c: Conversation): Record<string, unknown>[] {
  const prompt = renderPrompt(c.messages, c.tools);
  if (c.kind === 'arithmetic') return [{ stage: 'arithmetic', prompt, answer_number: c.answer }];
  if (c.kind === 'chat') return [{ stage: 'chat', prompt, final_answer: c.turn.content }];
  return [
    { stage: 'tool-call', prompt, tools: c.tools, answer: c.turn.toolCalls?.[0] },
    {
      stage: 'tool-answer',
      prompt: renderPrompt(afterToolMessages(c), c.tools),
      final_answer: c.finalTurn?.content,
    },
  ];
}

/**
 * A held-out tool conversation as a `moeserve eval tool-loop` scenario (src/eval/tool-scenario.ts):
 * the task is the user question, each tool answers with the scripted result (the needed tool with
 * the conversation's result, the others with an error), and the expected call is the needed tool.
 */
export function toolScenario(c: Conversation, name: string): Record<string, unknown> {
  const needed = c.turn.toolCalls?.[0]?.name;
  const sys = c.messages.find((m) => m.role === 'system');
  return {
    name,
    ...(sys ? { system: sys.content } : {}),
    task: questionOf(c),
    tools: (c.tools ?? []).map((t) => ({
      ...t.function,
      results: [
        t.function.name === needed ? JSON.parse(c.toolResult ?? '{}') : { error: 'not needed' },
      ],
    })),
    expectedCalls: needed ? [needed] : [],
    maxTurns: 3,
  };
}

function jsonl(rows: readonly unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

async function writeTrain(
  path: string,
  rng: Rng,
  num: number,
  exclude: Set<string>,
): Promise<Record<string, number>> {
  const gz = createGzip({ level: 9 });
  const done = once(gz.pipe(createWriteStream(path)), 'finish');
  const counts: Record<string, number> = {};
  for (let made = 0; made < num;) {
    const c = conversation(rng);
    if (c.kind !== 'chat' && exclude.has(questionOf(c))) continue;
    made++;
    for (const s of trainingSamples(c)) {
      counts[s.kind] = (counts[s.kind] ?? 0) + 1;
      if (!gz.write(JSON.stringify(s) + '\n')) await once(gz, 'drain');
    }
  }
  gz.end();
  await done;
  return counts;
}

/** Writes train.jsonl.gz, the held-out files, chat_template.jinja and manifest.json. */
export async function generateData(opts: GenDataOptions): Promise<GenDataManifest> {
  await mkdir(opts.outDir, { recursive: true });
  const root = new Rng(opts.seed);
  const held = heldoutConversations(root.fork('heldout'), opts.numHeldout);
  const heldRecords = held.map(heldoutRecord);
  const gsm8k = held
    .filter((c) => c.kind === 'arithmetic')
    .map((c) => ({ question: questionOf(c), answer: heldoutRecord(c)['answer'] }));
  const byKind = (k: string) => heldRecords.filter((r) => r['kind'] === k);
  const files: Record<string, string> = {
    'heldout.jsonl': jsonl(heldRecords),
    'heldout-gsm8k.jsonl': jsonl(gsm8k),
    'heldout-tools.jsonl': jsonl(byKind('tool')),
    'heldout-chat.jsonl': jsonl(byKind('chat')),
    'heldout-prompts.jsonl': jsonl(held.flatMap(heldoutPrompts)),
    'chat_template.jinja': M3_CHAT_TEMPLATE,
  };
  for (const [name, text] of Object.entries(files)) await writeFile(join(opts.outDir, name), text);
  const scenarioDir = join(opts.outDir, 'tool-scenarios');
  await mkdir(scenarioDir, { recursive: true });
  const toolConvs = held.filter((c) => c.kind === 'tool');
  for (const [i, c] of toolConvs.entries()) {
    const name = `heldout-tool-${String(i).padStart(3, '0')}`;
    await writeFile(
      join(scenarioDir, `${name}.json`),
      JSON.stringify(toolScenario(c, name)) + '\n',
    );
  }
  const exclude = new Set(held.map(questionOf));
  const trainPath = join(opts.outDir, 'train.jsonl.gz');
  const counts = await writeTrain(trainPath, root.fork('train'), opts.numTrain, exclude);
  const manifest: GenDataManifest = {
    seed: opts.seed,
    numTrainConversations: opts.numTrain,
    trainSamplesByKind: counts,
    heldoutByKind: Object.fromEntries(
      ['arithmetic', 'tool', 'chat'].map((k) => [k, byKind(k).length]),
    ),
    files: ['train.jsonl.gz', ...Object.keys(files), 'tool-scenarios/', 'manifest.json'],
  };
  await writeFile(join(opts.outDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}
