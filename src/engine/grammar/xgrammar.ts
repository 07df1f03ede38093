import Module, { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as XGrammar from '@mlc-ai/web-xgrammar';

/** The @mlc-ai/web-xgrammar module: TokenizerInfo, GrammarCompiler, GrammarMatcher, Grammar. */
export type XGrammarModule = typeof XGrammar;

// Node's CommonJS loader internals the shim uses (stable since Node 0.x; untyped in @types/node).
interface CjsModule {
  filename: string;
  paths: string[];
  exports: unknown;
  _compile(source: string, filename: string): void;
}
interface CjsModuleClass {
  new (id: string): CjsModule;
  _nodeModulePaths(dir: string): string[];
}

let loaded: XGrammarModule | null = null;

/**
 * Loads @mlc-ai/web-xgrammar. Its package.json says `"type": "module"` but lib/index.js is a UMD
 * bundle that needs CommonJS's `require`/`__filename` (and imports nothing as ESM), so neither
 * `import` nor `require` can load it as shipped: the file is compiled here as the CommonJS
 * module it is. Cached: one WASM instance per process.
 */
export function loadXGrammar(): XGrammarModule {
  if (loaded) return loaded;
  const filename = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
  const Cjs = Module as unknown as CjsModuleClass;
  const m = new Cjs(filename);
  m.filename = filename;
  m.paths = Cjs._nodeModulePaths(dirname(filename));
  m._compile(readFileSync(filename, 'utf8'), filename);
  loaded = m.exports as XGrammarModule;
  return loaded;
}
