#!/usr/bin/env node
import { COMMANDS, HIDDEN_COMMANDS } from './commands.js';
import { runCommand, UsageError } from './command.js';
import { readEnv } from '../config/env.js';

function usage(): string {
  const lines = ['usage: moeserve <command> [options]', '', 'Commands:'];
  for (const [name, c] of Object.entries(COMMANDS))
    if (!HIDDEN_COMMANDS.has(name)) lines.push(`  ${name.padEnd(16)} ${c.summary}`);
  lines.push('', 'Run `moeserve <command> --help` for the options of one command.');
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  // Two-word commands ("bench serve", "eval gsm8k") are registered with a space.
  const two = argv.length >= 2 ? `${argv[0]} ${argv[1]}` : '';
  const name = two in COMMANDS ? two : (argv[0] ?? '');
  const rest = argv.slice(name.split(' ').length);
  const entry = COMMANDS[name];
  if (!entry) {
    if (name === '' || name === '--help' || name === '-h' || name === 'help') {
      console.log(usage());
      return name === '' ? 1 : 0;
    }
    console.error(`moeserve: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  return runCommand(await entry.load(), rest);
}

// `moeserve forward --out - | head`: a reader that closes the pipe early is normal use, not an
// error; stop quietly instead of dying with an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(process.exitCode ?? 0);
  });

main(process.argv.slice(2)).then(
  (rc) => {
    process.exitCode = rc;
  },
  (e: unknown) => {
    const err = e as Error;
    if (err instanceof UsageError) console.error(`moeserve: ${err.message}`);
    else
      console.error(
        `moeserve: ${err.name && err.name !== 'Error' ? `${err.name}: ` : ''}${err.message}`,
      );
    if (readEnv().debug) console.error(err.stack);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  },
);
