import type { Command } from './command.js';

/** `moeserve serve`: placeholder until the HTTP server lands (issue 6). */
export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve a model over an OpenAI-compatible HTTP API',
  options: {},
  async run() {
    throw new Error('moeserve serve is not implemented yet');
  },
};
