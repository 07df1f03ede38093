import { heldoutConversations, toolScenario } from '../../datagen/gen-data.js';
import { Rng } from '../../datagen/rng.js';
import { checkScenario, type ToolScenario } from '../tool-scenario.js';

/** The gen-data seed of the bundled model's training data (docs/tiny-model.md). */
export const TINY_MODEL_SEED = 20261129;

/**
 * The first `count` held-out tool conversations of the bundled model's data, as tool-loop
 * scenarios: the tools of src/datagen/tool-catalog.ts, asked the way the model was trained,
 * on questions kept out of its training. These are what `gen-data --seed 20261129` writes to
 * `tool-scenarios/heldout-tool-NNN.json` (the first tool conversations do not depend on how
 * many are drawn), so the default `eval tool-loop` measures what the model can do.
 */
export function tinyModelScenarios(count: number): ToolScenario[] {
  const held = heldoutConversations(new Rng(TINY_MODEL_SEED).fork('heldout'), count);
  return held
    .filter((c) => c.kind === 'tool')
    .map((c, i) => {
      const name = `heldout-tool-${String(i).padStart(3, '0')}`;
      return checkScenario(toolScenario(c, name), name);
    });
}
