/**
 * `npm run bench:grammar`: the per-token CPU cost of structured outputs on the bundled model's
 * vocabulary (models/moeserve-tiny-m3, V = 3072): xgrammar's next-token mask, accept, and
 * applying the mask to a logits row, while a valid output is driven through the grammar.
 * Grammars: a JSON Schema (response_format), the builtin JSON object, and the M3 tool-call
 * grammar of two tools (tool_choice "required"). Also the one-off compile time (cache miss).
 * Medians over 20 repetitions. Prints a table and writes docs/benchmarks/grammar.json.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { GrammarService, type GrammarSpec } from '../engine/grammar/grammar-service.js';
import { applyTokenMask } from '../engine/logits-constraint.js';
import { grammarVocab } from '../server/grammar-vocab.js';
import { formatToolCalls } from '../server/parsers/tool-call-formatter.js';
import { toolCallGrammar } from '../server/parsers/tool-call-grammar.js';
import { loadTokenizer } from '../tokenizer/load-tokenizer.js';

const MODEL = fileURLToPath(new URL('../../models/moeserve-tiny-m3', import.meta.url));
const OUT = fileURLToPath(new URL('../../docs/benchmarks/grammar.json', import.meta.url));
const REPS = 20;
const EOS = 2;
const V = 3072;

const schema = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 24 },
    temperature: { type: 'integer', minimum: -60, maximum: 60 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['city', 'temperature', 'unit'],
};
const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: schema } },
  {
    type: 'function',
    function: {
      name: 'convert_currency',
      parameters: {
        type: 'object',
        properties: {
          amount: { type: 'integer' },
          from: { type: 'string' },
          to: { type: 'string' },
        },
        required: ['amount', 'from', 'to'],
      },
    },
  },
];
const value = { city: 'Paris', temperature: 21, unit: 'celsius', tags: ['sunny', 'mild wind'] };

const CASES: { name: string; spec: GrammarSpec; text: string }[] = [
  {
    name: 'json_schema',
    spec: { kind: 'json_schema', schema: JSON.stringify(schema) },
    text: JSON.stringify(value).replaceAll(',', ', ').replaceAll('":', '": '),
  },
  {
    name: 'json_object',
    spec: { kind: 'json_object' },
    text: JSON.stringify(value).replaceAll(',', ', ').replaceAll('":', '": '),
  },
  {
    name: 'tool_call (required)',
    spec: { kind: 'ebnf', grammar: toolCallGrammar(tools) },
    text: formatToolCalls([{ name: 'get_weather', arguments: value }]),
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const tok = loadTokenizer(MODEL);
  const rows = [];
  for (const c of CASES) {
    const t0 = performance.now();
    const fresh = await GrammarService.create(grammarVocab(tok, V, [EOS]));
    const t1 = performance.now();
    await fresh.compiled(c.spec);
    const compileMs = performance.now() - t1;
    const ids = [...tok.encode(c.text, { addSpecialTokens: false }), EOS];
    const mask: number[] = [];
    const accept: number[] = [];
    const apply: number[] = [];
    const row = new Float32Array(V);
    for (let r = 0; r < REPS; r++) {
      const { constraint, dispose } = await fresh.constraint(c.spec, 'none');
      for (const id of ids) {
        let s = performance.now();
        await constraint.prepare?.();
        mask.push(performance.now() - s);
        s = performance.now();
        applyTokenMask(row.fill(0), constraint.nextTokenMask()!);
        apply.push(performance.now() - s);
        s = performance.now();
        constraint.accept(id);
        accept.push(performance.now() - s);
      }
      if (!constraint.isTerminated())
        throw new Error(`${c.name}: the text did not complete the grammar`);
      dispose();
    }
    await fresh.close();
    rows.push({
      grammar: c.name,
      tokens: ids.length,
      compile_ms: compileMs,
      tokenizer_info_ms: t1 - t0,
      mask_us: median(mask) * 1000,
      accept_us: median(accept) * 1000,
      apply_us: median(apply) * 1000,
    });
  }
  console.log(
    'grammar                tokens  compile ms  mask µs/tok  accept µs/tok  apply µs/tok',
  );
  for (const r of rows)
    console.log(
      `${r.grammar.padEnd(22)} ${String(r.tokens).padStart(6)} ${r.compile_ms.toFixed(1).padStart(11)} ${r.mask_us.toFixed(1).padStart(12)} ${r.accept_us.toFixed(1).padStart(14)} ${r.apply_us.toFixed(1).padStart(13)}`,
    );
  const record = {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model,
    load: loadavg(),
    vocab: V,
    rows,
  };
  writeFileSync(OUT, `${JSON.stringify(record, null, 2)}\n`);
  console.log(`wrote ${OUT}`);
}

await main();
