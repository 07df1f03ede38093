import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Import patterns of the layers above the engine, and of everything below the server. */
const UPPER_LAYERS = ['**/server/**', '**/cli/**', '**/tools/**'];
const LOWER_LAYERS = [
  '**/engine/**',
  '**/scheduler/**',
  '**/kv-cache/**',
  '**/model/**',
  '**/backend/**',
  '**/parallel/**',
  '**/tensor/**',
];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.device/**',
      'models/**',
      'training/**',
      'coverage/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'max-lines': ['warn', { max: 500, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['warn', { max: 80, skipBlankLines: true, skipComments: true }],
      'no-restricted-imports': 'off',
    },
  },
  {
    files: ['src/scheduler/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['**/backend/**', '**/tensor/**', '**/model/**'] },
      ],
    },
  },
  {
    files: ['src/model/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['**/backend/cpu/**', '**/backend/cuda/**', '**/server/**', '**/engine/**'] },
      ],
    },
  },
  // The layers (docs/architecture.md): cli/tools -> server -> engine -> {scheduler, kv-cache,
  // model} -> {backend, parallel} -> tensor. An import that runs back up fails the build.
  {
    files: ['src/parallel/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: UPPER_LAYERS.concat('**/model/**', '**/engine/**', '**/scheduler/**'),
              message:
                'parallel/ holds communicators, transport and layouts only: it imports no model, engine or server',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/engine/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ group: UPPER_LAYERS, message: 'the engine imports no server, CLI or tool' }],
        },
      ],
    },
  },
  {
    // One module reads the environment (defaults and parsing written once).
    files: ['src/**/*.ts'],
    ignores: ['src/config/env.ts', '**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'read environment variables through src/config/env.ts (readEnv)',
        },
      ],
    },
  },
  {
    files: ['src/server/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/cli/**', '**/tools/**'], message: 'the server imports no CLI or tool' },
          ],
        },
      ],
    },
  },
  {
    // The benchmark toolkit speaks HTTP to a server; model-level benchmarks live in src/tools/.
    files: ['src/bench/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: UPPER_LAYERS.concat(LOWER_LAYERS),
              message:
                'bench/ speaks HTTP: no model, engine or backend imports (model-level benchmarks go in src/tools/)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['scripts/**/*.mjs'],
    languageOptions: {
      globals: { Buffer: 'readonly', console: 'readonly', process: 'readonly', URL: 'readonly' },
    },
  },
  {
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: { 'max-lines-per-function': 'off', 'max-lines': 'off', 'no-restricted-imports': 'off' },
  },
);
