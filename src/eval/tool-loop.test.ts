import { afterEach, describe, expect, it } from 'vitest';
import type { Script, ScriptedRequest } from '../bench/scripted-reply.js';
import { ScriptedServer } from '../bench/scripted-server.js';
import { entropyArrayArgs } from './scenarios/entropy-array-args.js';
import { threeToolsSummary } from './scenarios/three-tools-summary.js';
import { formatCallLog, formatRunsTable, runPassed } from './tool-loop-report.js';
import { runToolLoop } from './tool-loop.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const toolTurns = (req: ScriptedRequest): number =>
  (req.body['messages'] as { role: string }[]).filter((m) => m.role === 'assistant').length;

async function play(script: Script, scenario = threeToolsSummary) {
  server = await ScriptedServer.start(script);
  const o = {
    endpoint: { baseUrl: server.url, timeoutMs: 5000 },
    model: 'm',
    temperature: 0,
    maxTokens: 256,
  };
  return runToolLoop(scenario, o, 0);
}

describe('runToolLoop', () => {
  it('terminates in three calls for a healthy agent and feeds back scripted results', async () => {
    const calls = [
      { name: 'get_weather', arguments: '{"city":"Lisbon","unit":"celsius"}' },
      { name: 'get_local_time', arguments: '{"city":"Lisbon"}' },
      { name: 'convert_currency', arguments: '{"amount":150,"from":"USD","to":"EUR"}' },
    ];
    const run = await play((req) => {
      const k = toolTurns(req);
      return k < 3
        ? { content: [], toolCalls: [calls[k]!] }
        : { content: ['Sunny, 21 C; 138.45 EUR.'] };
    });
    expect(run).toMatchObject({
      numToolCalls: 3,
      numMalformed: 0,
      numRepeated: 0,
      finalAnswer: true,
      hitTurnCap: false,
      expectedOrder: true,
      turns: 4,
    });
    expect(runPassed(run)).toBe(true);
    const last = server?.requests[3]?.body['messages'] as { role: string; content: string }[];
    expect(last.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    expect(JSON.parse(last[6]!.content)).toEqual({
      amount: 150,
      from: 'USD',
      to: 'EUR',
      result: 138.45,
    });
    expect(server?.requests[0]?.body['tool_choice']).toBe('auto');
  });

  it('counts repeated identical calls and the turn cap for a looping agent', async () => {
    const run = await play(() => ({
      content: [],
      toolCalls: [{ name: 'get_weather', arguments: '{"unit":"celsius","city":"Lisbon"}' }],
    }));
    expect(run).toMatchObject({
      numToolCalls: 12,
      numRepeated: 11,
      finalAnswer: false,
      hitTurnCap: true,
    });
    expect(formatRunsTable([run])).toContain('| reached a final answer | no (hit turn cap) |');
  });

  it('flags malformed arguments and per-turn drift as in seed 002', async () => {
    const args = [
      ['normalize', '{"values": [2, 1, 1]}'],
      ['compute_entropy', '{"values": "[0.5, 0.25, 0.25]", "base": 2}'],
      ['compute_entropy', '{"values": [0.5, 0.25, 0.25], "base": 2}'],
      ['compute_entropy', '{"values": [0, 0, 0], "base": ""}'],
      ['compute_entropy', '{"values": ["", "", ""], "base": ""}'],
      ['compute_entropy', '{"values": [0.5'],
    ];
    const run = await play((req) => {
      const a = args[toolTurns(req)];
      return a
        ? { content: [], toolCalls: [{ name: a[0]!, arguments: a[1]! }] }
        : { content: [''] };
    }, entropyArrayArgs);
    expect(run.calls.map((c) => c.drift)).toEqual([
      [],
      [],
      [],
      ['values: emptied', 'base: number -> string'],
      ['values: number[] -> string[]', 'base: number -> string'],
      [],
    ]);
    expect(run.calls.map((c) => c.schemaErrors.length)).toEqual([0, 1, 0, 1, 4, 0]);
    expect(run.calls[5]?.parseError).toBeDefined();
    expect(run).toMatchObject({ numMalformed: 4, finalAnswer: false, hitTurnCap: false });
    const log = formatCallLog(run);
    expect(log).toContain(
      'turn 1   compute_entropy {"values": "[0.5, 0.25, 0.25]", "base": 2}  <- $.values: expected array, got string',
    );
    expect(log).toMatch(/turn 5 .* <- not JSON/);
  });
});
