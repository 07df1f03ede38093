import type { Rng } from './rng.js';

/** One generated word problem with its worked steps (GSM8K-like, integer results only). */
export interface ArithmeticProblem {
  question: string;
  /** Worked steps, e.g. ["16 - 3 = 13", "13 - 4 = 9", "9 * 2 = 18"]. */
  steps: string[];
  answer: number;
}

const NAMES: readonly [string, 'she' | 'he'][] = [
  ['Mia', 'she'],
  ['Liam', 'he'],
  ['Emma', 'she'],
  ['Noah', 'he'],
  ['Ava', 'she'],
  ['Omar', 'he'],
  ['Sofia', 'she'],
  ['Lucas', 'he'],
  ['Zoe', 'she'],
  ['Ethan', 'he'],
  ['Lena', 'she'],
  ['Ravi', 'he'],
  ['Chloe', 'she'],
  ['Mateo', 'he'],
  ['Aisha', 'she'],
  ['Ben', 'he'],
  ['Nora', 'she'],
  ['Kenji', 'he'],
  ['Ivy', 'she'],
  ['Diego', 'he'],
  ['Hana', 'she'],
  ['Sam', 'he'],
  ['Lucy', 'she'],
  ['Felix', 'he'],
  ['Maya', 'she'],
  ['Leo', 'he'],
  ['Grace', 'she'],
  ['Max', 'he'],
  ['Ruby', 'she'],
  ['Jack', 'he'],
];
const ITEMS: readonly [string, boolean][] = [
  ['apples', true],
  ['cookies', true],
  ['oranges', true],
  ['cupcakes', true],
  ['eggs', true],
  ['candies', true],
  ['muffins', true],
  ['pears', true],
  ['marbles', false],
  ['stickers', false],
  ['pencils', false],
  ['books', false],
  ['stamps', false],
  ['coins', false],
  ['shells', false],
  ['cards', false],
  ['toy cars', false],
  ['balloons', false],
  ['crayons', false],
  ['beads', false],
];
const CONTAINERS = ['boxes', 'bags', 'jars', 'baskets', 'packs', 'trays'] as const;
const GIVERS = ['a friend', 'a neighbor', 'the teacher', 'grandma', 'a classmate'];
const THINGS = ['notebook', 'hat', 'ball', 'lamp', 'bottle of juice', 'kite', 'puzzle', 'scarf'];

interface Ctx {
  rng: Rng;
  name: string;
  pron: string;
  obj: string;
  poss: string;
  items: string;
  food: boolean;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function step(a: number, op: string, b: number, r: number): string {
  return `${a} ${op} ${b} = ${r}`;
}

/** One more operation on the running quantity x; null when it does not fit. */
function operation(c: Ctx, x: number): { text: string; step: string; value: number } | null {
  const { rng, pron, items } = c;
  const P = cap(pron);
  switch (rng.int(0, 3)) {
    case 0: {
      const n = rng.int(1, 40);
      const text = rng.pick([
        `${P} buys ${n} more ${items}.`,
        `${P} finds ${n} more ${items}.`,
        `${cap(rng.pick(GIVERS))} gives ${c.obj} ${n} more ${items}.`,
        `Then ${pron} gets ${n} more.`,
      ]);
      return { text, step: step(x, '+', n, x + n), value: x + n };
    }
    case 1: {
      if (x < 3) return null;
      const n = rng.int(1, x - 1);
      const verbs = [
        `gives ${n} ${items} to ${rng.pick(NAMES)[0]}`,
        `loses ${n} ${items}`,
        `sells ${n} of them`,
      ];
      if (c.food) verbs.push(`eats ${n} of them`);
      return { text: `${P} ${rng.pick(verbs)}.`, step: step(x, '-', n, x - n), value: x - n };
    }
    case 2: {
      const k = rng.int(2, 5);
      if (x * k > 250) return null;
      const word = k === 2 ? 'doubles' : k === 3 ? 'triples' : `grows ${k} times larger`;
      const text = rng.pick([
        `Then the number of ${items} ${c.poss} has ${word}.`,
        `Then ${pron} ends up with ${k} times as many ${items}.`,
      ]);
      return { text, step: step(x, '*', k, x * k), value: x * k };
    }
    default: {
      const k = rng.int(2, 4);
      if (x % k !== 0 || x < 2 * k) return null;
      const frac = k === 2 ? 'half' : k === 3 ? 'a third' : 'a quarter';
      return { text: `${P} keeps ${frac} of them.`, step: step(x, '/', k, x / k), value: x / k };
    }
  }
}

function context(rng: Rng): Ctx {
  const [name, pron] = rng.pick(NAMES);
  const [items, food] = rng.pick(ITEMS);
  return {
    rng,
    name,
    pron,
    items,
    food,
    obj: pron === 'she' ? 'her' : 'him',
    poss: pron === 'she' ? 'she' : 'he',
  };
}

/** Family A: a quantity that changes over 1-3 steps. */
function quantityProblem(rng: Rng, numSteps: number): ArithmeticProblem {
  const c = context(rng);
  const sentences: string[] = [];
  const steps: string[] = [];
  let x: number;
  if (rng.chance(0.35)) {
    const a = rng.int(2, 9);
    const b = rng.int(2, 12);
    x = a * b;
    sentences.push(`${c.name} has ${a} ${rng.pick(CONTAINERS)} with ${b} ${c.items} in each.`);
    steps.push(step(a, '*', b, x));
  } else {
    x = rng.int(2, 60);
    sentences.push(`${c.name} has ${x} ${c.items}.`);
  }
  let lastShare = false;
  while (steps.length < numSteps) {
    const isLast = steps.length === numSteps - 1;
    const k = rng.int(2, 6);
    if (isLast && rng.chance(0.2) && x % k === 0 && x >= k) {
      sentences.push(`${cap(c.pron)} shares them equally among ${k} friends.`);
      steps.push(step(x, '/', k, x / k));
      x /= k;
      lastShare = true;
      continue;
    }
    const op = operation(c, x);
    if (!op) continue;
    sentences.push(op.text);
    steps.push(op.step);
    x = op.value;
  }
  const q = lastShare
    ? `How many ${c.items} does each friend get?`
    : rng.pick([`How many ${c.items} does ${c.name} have now?`, `How many ${c.items} are left?`]);
  return { question: `${sentences.join(' ')} ${q}`, steps, answer: x };
}

/** Family B: shopping, with a price product, an extra item and maybe change. */
function shoppingProblem(rng: Rng, numSteps: number): ArithmeticProblem {
  const c = context(rng);
  const a = rng.int(2, 9);
  const p = rng.int(2, 12);
  const total = a * p;
  const steps = [step(a, '*', p, total)];
  let text = `${c.name} buys ${a} ${c.items} for ${p} dollars each`;
  let x = total;
  if (numSteps >= 2) {
    const q = rng.int(1, 30);
    text += ` and a ${rng.pick(THINGS)} for ${q} dollars`;
    steps.push(step(x, '+', q, x + q));
    x += q;
  }
  text += '.';
  if (numSteps >= 3) {
    const bill = [20, 50, 100, 200].find((b) => b > x) ?? 500;
    steps.push(step(bill, '-', x, bill - x));
    x = bill - x;
    return {
      question: `${text} ${cap(c.pron)} pays with a ${bill} dollar bill. How much change does ${c.pron} get?`,
      steps,
      answer: x,
    };
  }
  const q =
    numSteps >= 2 ? `How much does ${c.pron} spend in total?` : `How much does ${c.pron} pay?`;
  return { question: `${text} ${q}`, steps, answer: x };
}

/** Family C: a bare expression ("What is 7 * 8?"). */
function bareProblem(rng: Rng): ArithmeticProblem {
  const op = rng.pick(['+', '-', '*', '/'] as const);
  let a = rng.int(2, 99);
  let b = rng.int(2, 99);
  if (op === '*') [a, b] = [rng.int(2, 20), rng.int(2, 12)];
  if (op === '/') {
    b = rng.int(2, 12);
    a = b * rng.int(2, 12);
  }
  if (op === '-' && b > a) [a, b] = [b, a];
  const r = op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : a / b;
  const words = { '+': 'plus', '-': 'minus', '*': 'times', '/': 'divided by' }[op];
  const question = rng.pick([
    `What is ${a} ${op} ${b}?`,
    `What is ${a} ${words} ${b}?`,
    `Compute ${a} ${op} ${b}.`,
  ]);
  return { question, steps: [step(a, op, b, r)], answer: r };
}

export function arithmeticProblem(rng: Rng): ArithmeticProblem {
  const numSteps = rng.int(1, 3);
  const family = rng.next();
  if (family < 0.15) return bareProblem(rng);
  if (family < 0.35) return shoppingProblem(rng, numSteps);
  return quantityProblem(rng, numSteps);
}

/** The reasoning text: "16 - 3 = 13. 13 - 4 = 9. 9 * 2 = 18." */
export function arithmeticReasoning(p: ArithmeticProblem): string {
  return p.steps.map((s) => `${s}.`).join(' ');
}

/** The visible answer: a sentence and the GSM8K `#### N` line. */
export function arithmeticContent(p: ArithmeticProblem): string {
  return `The answer is ${p.answer}.\n#### ${p.answer}`;
}
