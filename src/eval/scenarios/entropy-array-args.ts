import type { ToolScenario } from '../tool-scenario.js';

/**
 * Seed 002's second probe: an array-of-number argument with an optional parameter, used
 * across several turns. Broken models serialise the array as a string, then zero or empty it.
 */
export const entropyArrayArgs: ToolScenario = {
  name: 'entropy-array-args',
  description: 'array-of-number arguments reused over several turns',
  task:
    'Normalize the weights [2, 1, 1] into a probability distribution, compute its Shannon ' +
    'entropy in base 2, then compute the entropy of the distribution [0.7, 0.2, 0.1] in base 2. ' +
    'Use the tools for every computation and finish with both entropies.',
  tools: [
    {
      name: 'normalize',
      description: 'Scale non-negative weights so that they sum to 1.',
      parameters: {
        type: 'object',
        properties: { values: { type: 'array', items: { type: 'number' } } },
        required: ['values'],
      },
      results: [{ values: [0.5, 0.25, 0.25] }],
    },
    {
      name: 'compute_entropy',
      description: 'Shannon entropy of a probability distribution.',
      parameters: {
        type: 'object',
        properties: {
          values: { type: 'array', items: { type: 'number' } },
          base: { type: 'number', description: 'logarithm base, default e' },
        },
        required: ['values'],
      },
      results: [{ entropy: 1.5 }, { entropy: 1.15678 }],
    },
  ],
  expectedCalls: ['normalize', 'compute_entropy', 'compute_entropy'],
  maxTurns: 12,
};
