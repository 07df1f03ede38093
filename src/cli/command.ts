import { parseArgs, type ParseArgsConfig } from 'node:util';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & {
  description: string;
  valueName?: string;
};

/** One `moeserve <name>` subcommand. Options are parsed with node:util parseArgs. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly usage?: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  run(values: Record<string, unknown>, positionals: string[]): Promise<number | void>;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/** What an option is when it is not given: its default, else off (a switch) or unset. */
function defaultText(spec: OptionSpec): string {
  if (spec.default !== undefined)
    return spec.type === 'boolean' && spec.default === false ? 'off' : String(spec.default);
  return spec.type === 'boolean' ? 'off' : 'unset';
}

/** Every option with what it is when not given (`--help` shows defaults, as vLLM's does). */
export function helpText(cmd: Command): string {
  const lines = [
    `moeserve ${cmd.name}${cmd.usage ? ` ${cmd.usage}` : ''}`,
    '',
    cmd.summary,
    '',
    'Options:',
  ];
  for (const [name, spec] of Object.entries(cmd.options)) {
    const flag = `--${name}${spec.type === 'string' ? ` ${spec.valueName ?? name.toUpperCase()}` : ''}`;
    const def = ` (default: ${defaultText(spec)})`;
    const stated = spec.default === undefined && /\bdefault\b/i.test(spec.description);
    lines.push(`  ${flag.padEnd(34)} ${spec.description}${stated ? '' : def}`);
  }
  lines.push(`  ${'--help'.padEnd(34)} show this help`);
  return lines.join('\n');
}

export async function runCommand(cmd: Command, argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(helpText(cmd));
    return 0;
  }
  const options: Record<string, OptionSpec> = {};
  for (const [k, spec] of Object.entries(cmd.options)) {
    const { description: _d, valueName: _v, ...rest } = spec;
    options[k] = rest as OptionSpec;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(`${(e as Error).message}\n\n${helpText(cmd)}`);
  }
  const rc = await cmd.run(parsed.values as Record<string, unknown>, parsed.positionals);
  return typeof rc === 'number' ? rc : 0;
}

/** Reads a required string option or throws a UsageError naming it. */
export function requireString(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`missing required option --${name}`);
  return v;
}

export function intOption(values: Record<string, unknown>, name: string, fallback: number): number {
  const v = values[name];
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n))
    throw new UsageError(`--${name} must be an integer (got "${String(v)}")`);
  return n;
}

export function numberOption(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
): number {
  const v = values[name];
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a number (got "${String(v)}")`);
  return n;
}
