// Token ids of a few chat prompts, rendered with the model's chat template by moeserve's own
// tokenizer (needs `npm run build`): node training/prompt_ids.mjs MODEL_DIR OUT.json
// upcycle.py --check-ids OUT.json compares the source and the upcycled model on them (Python has
// no HF tokenizers on the CPU machine).
import { readFileSync, writeFileSync } from 'node:fs';
import { loadTokenizer } from '../dist/tokenizer/load-tokenizer.js';
import { readTokenizerConfig } from '../dist/tokenizer/tokenizer-config.js';
import { renderChat, selectChatTemplate } from '../dist/tokenizer/chat-template.js';

const [dir, out] = process.argv.slice(2);
const tok = loadTokenizer(dir);
const template = selectChatTemplate(readTokenizerConfig(dir).chatTemplate);
const sets = ['eval-tiny', 'eval-tiny-fresh'].map((n) =>
  JSON.parse(readFileSync(new URL(`../data/tiny-m3/${n}.json`, import.meta.url), 'utf8')),
);
const questions = [
  ...sets.flatMap((s) => s.arithmetic.slice(0, 3).map((a) => a.question)),
  'hi',
  'Hello! Who are you?',
  'What is 12 + 7?',
];
const ids = questions.map((q) =>
  tok.encode(renderChat(template, [{ role: 'user', content: q }]).prompt, {
    addSpecialTokens: false,
  }),
);
writeFileSync(out, JSON.stringify(ids) + '\n');
console.log(`${ids.length} prompts, ${ids.map((x) => x.length).join(' ')} tokens -> ${out}`);
