import type { ToolScenario } from '../tool-scenario.js';

/** A search-then-read chain where the second call must reuse an id from the first result. */
export const docsLookupChain: ToolScenario = {
  name: 'docs-lookup-chain',
  description: 'search, then fetch a document by the id the search returned',
  system: 'You are a support agent. Answer only from documents you have read with the tools.',
  task:
    'Which port does the moeserve metrics endpoint listen on by default? Search the docs, ' +
    'read the most relevant document, then answer with the port number.',
  tools: [
    {
      name: 'search_docs',
      description: 'Full-text search over the product documentation.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string' },
          max_results: { type: 'integer' },
        },
        required: ['query'],
      },
      results: [
        {
          results: [
            { doc_id: 'ops-017', title: 'Metrics and monitoring' },
            { doc_id: 'ops-002', title: 'Installing moeserve' },
          ],
        },
      ],
    },
    {
      name: 'fetch_doc',
      description: 'Full text of one document by its doc_id.',
      parameters: {
        type: 'object',
        properties: { doc_id: { type: 'string' } },
        required: ['doc_id'],
      },
      results: [
        {
          doc_id: 'ops-017',
          text: 'Prometheus metrics are served at /metrics on the API port, 8000 by default.',
        },
      ],
    },
  ],
  expectedCalls: ['search_docs', 'fetch_doc'],
  maxTurns: 8,
};
