import type { ToolScenario } from '../tool-scenario.js';
import { docsLookupChain } from './docs-lookup-chain.js';
import { entropyArrayArgs } from './entropy-array-args.js';
import { threeToolsSummary } from './three-tools-summary.js';

export const BUILTIN_SCENARIOS: readonly ToolScenario[] = [
  threeToolsSummary,
  entropyArrayArgs,
  docsLookupChain,
];
