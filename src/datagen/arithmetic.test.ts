import { describe, expect, it } from 'vitest';
import { arithmeticContent, arithmeticProblem, arithmeticReasoning } from './arithmetic.js';
import { Rng } from './rng.js';

const STEP = /^(\d+) ([-+*/]) (\d+) = (\d+)$/;

function evaluate(a: number, op: string, b: number): number {
  return op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : a / b;
}

describe('arithmetic problems', () => {
  it('have 1-3 correct integer steps ending in the answer', () => {
    const rng = new Rng(42);
    for (let i = 0; i < 3000; i++) {
      const p = arithmeticProblem(rng);
      expect(p.steps.length).toBeGreaterThanOrEqual(1);
      expect(p.steps.length).toBeLessThanOrEqual(3);
      let last = NaN;
      for (const s of p.steps) {
        const m = STEP.exec(s);
        expect(m, s).not.toBeNull();
        const [, a, op, b, r] = m as RegExpExecArray;
        expect(evaluate(Number(a), op as string, Number(b))).toBe(Number(r));
        last = Number(r);
      }
      expect(last).toBe(p.answer);
      expect(Number.isInteger(p.answer) && p.answer >= 0).toBe(true);
      expect(p.question.endsWith('?') || p.question.endsWith('.')).toBe(true);
    }
  });

  it('renders GSM8K-style reasoning and a #### answer line', () => {
    const p = { question: 'q', steps: ['16 - 3 = 13', '13 - 4 = 9', '9 * 2 = 18'], answer: 18 };
    expect(arithmeticReasoning(p)).toBe('16 - 3 = 13. 13 - 4 = 9. 9 * 2 = 18.');
    expect(arithmeticContent(p)).toBe('The answer is 18.\n#### 18');
  });
});
