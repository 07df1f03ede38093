import type { ToolScenario } from '../tool-scenario.js';

/** Seed 002's first probe: three tools in order, then a summary; a healthy model makes 3 calls. */
export const threeToolsSummary: ToolScenario = {
  name: 'three-tools-summary',
  description: 'call three tools in a fixed order, then answer in prose',
  task:
    'I am planning a day in Lisbon. First get the weather in Lisbon in celsius, then the local ' +
    'time in Lisbon, then convert 150 USD to EUR. Call the three tools in exactly that order, ' +
    'one at a time, then write a short summary of the results.',
  tools: [
    {
      name: 'get_weather',
      description: 'Current weather for a city.',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city', 'unit'],
      },
      results: [{ city: 'Lisbon', temperature: 21, unit: 'celsius', sky: 'sunny' }],
    },
    {
      name: 'get_local_time',
      description: 'Current local time in a city, ISO 8601.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
      results: [{ city: 'Lisbon', time: '2026-05-14T10:32:00+01:00' }],
    },
    {
      name: 'convert_currency',
      description: 'Convert an amount between ISO 4217 currencies.',
      parameters: {
        type: 'object',
        properties: {
          amount: { type: 'number' },
          from: { type: 'string' },
          to: { type: 'string' },
        },
        required: ['amount', 'from', 'to'],
      },
      results: [{ amount: 150, from: 'USD', to: 'EUR', result: 138.45 }],
    },
  ],
  expectedCalls: ['get_weather', 'get_local_time', 'convert_currency'],
  maxTurns: 12,
};
