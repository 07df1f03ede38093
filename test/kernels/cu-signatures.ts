/**
 * The extern "C" kernel signatures of a `.cu` file, read without a compiler (so `npm test`
 * needs no CUDA): comments and line continuations are removed, the function-like macros of
 * the file and of the headers it includes are expanded (parameters substituted token-wise,
 * `##` pasted, repeatedly, as the C preprocessor does for these files), and every
 * `extern "C" __global__ void [__launch_bounds__(..)] name(params)` is parsed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ArgType } from '../../src/backend/cuda/kernel-decl.js';

export interface CuKernel {
  readonly name: string;
  /** [parameter name, type] in order. */
  readonly params: readonly (readonly [string, ArgType])[];
  /** The body between its braces, macros expanded, comments removed. */
  readonly body: string;
}

interface Macro {
  readonly params: readonly string[];
  readonly body: string;
}

function clean(text: string): string {
  return text
    .replace(/\\\r?\n/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/\/\/[^\n]*/g, '');
}

/** Function-like macros of `text`; returns the text without its preprocessor lines. */
function takeMacros(text: string, macros: Map<string, Macro>): string {
  const kept: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*#\s*define\s+(\w+)\(([^)]*)\)\s*(.*)$/.exec(line);
    if (m) macros.set(m[1]!, { params: m[2]!.split(',').map((p) => p.trim()), body: m[3]! });
    if (!/^\s*#/.test(line)) kept.push(line);
  }
  return kept.join('\n');
}

/** Index just past the parenthesis that closes the one at `open`, and the top-level args. */
function callArgs(text: string, open: number): { end: number; args: string[] } {
  const args: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) {
      args.push(text.slice(start, i).trim());
      return { end: i + 1, args };
    } else if (c === ',' && depth === 1) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  throw new Error(`unbalanced macro call at ${text.slice(open, open + 40)}`);
}

function substitute(m: Macro, args: readonly string[]): string {
  const map = new Map(m.params.map((p, i) => [p, args[i] ?? '']));
  const body = m.body.replace(/\b\w+\b/g, (tok) => map.get(tok) ?? tok);
  return body.replace(/\s*##\s*/g, '');
}

function expand(text: string, macros: Map<string, Macro>): string {
  if (macros.size === 0) return text; // an empty alternation would match every '('
  const call = new RegExp(`\\b(${[...macros.keys()].join('|')})\\s*\\(`, 'g');
  for (let round = 0; round < 16; round++) {
    let changed = false;
    let out = '';
    let last = 0;
    call.lastIndex = 0;
    for (let m = call.exec(text); m; m = call.exec(text)) {
      const open = m.index + m[0].length - 1;
      const { end, args } = callArgs(text, open);
      out += text.slice(last, m.index) + ` ${substitute(macros.get(m[1]!)!, args)} `;
      last = end;
      call.lastIndex = end;
      changed = true;
    }
    text = out + text.slice(last);
    if (!changed) return text;
  }
  throw new Error('macro expansion did not settle');
}

const SCALARS: Readonly<Record<string, ArgType>> = {
  int: 'i32',
  'long long': 'i64',
  unsigned: 'u32',
  'unsigned int': 'u32',
  float: 'f32',
  double: 'f64',
};

function param(p: string, kernel: string): readonly [string, ArgType] {
  const m = /^(.*?)(\w+)$/.exec(p.trim());
  if (!m) throw new Error(`${kernel}: cannot read parameter "${p}"`);
  const type = m[1]!
    .replace(/\bconst\b/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (type.includes('*')) return [m[2]!, 'ptr'];
  const t = SCALARS[type];
  if (!t) throw new Error(`${kernel}: parameter "${p}" has a type the declarations do not know`);
  return [m[2]!, t];
}

/**
 * Index of the brace that closes the one at `open`, or the end of the text: both branches of an
 * `#if` stay in the text, so a file's braces need not balance.
 */
export function closingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return i;
  }
  return text.length;
}

/** The file's text with comments removed and its macros (and its headers' macros) expanded. */
export function cuSource(dir: string, file: string): string {
  const macros = new Map<string, Macro>();
  const text = clean(readFileSync(join(dir, `${file}.cu`), 'utf8'));
  for (const [, inc] of text.matchAll(/#\s*include\s+"([^"]+)"/g))
    takeMacros(clean(readFileSync(join(dir, inc!), 'utf8')), macros);
  return expand(takeMacros(text, macros), macros);
}

export function cuKernels(dir: string, file: string): CuKernel[] {
  const text = cuSource(dir, file);
  const sig =
    /extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)/g;
  return [...text.matchAll(sig)].map((m) => {
    const [whole, name, params] = m;
    const open = text.indexOf('{', m.index + whole.length);
    return {
      name: name!,
      params: params!
        .split(',')
        .filter((p) => p.trim() !== '')
        .map((p) => param(p, name!)),
      body: text.slice(open + 1, closingBrace(text, open)),
    };
  });
}
