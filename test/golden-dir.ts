import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The shared golden checkpoints folder. `MOESERVE_GOLDEN` wins; otherwise `shared/golden`
 * beside the repository (CI clones it as <clone>/../shared) or inside it (device copies).
 */
export const GOLDEN_DIR: string = (() => {
  const env = process.env['MOESERVE_GOLDEN'];
  if (env) return env;
  const candidates = [
    fileURLToPath(new URL('../../shared/golden', import.meta.url)),
    fileURLToPath(new URL('../shared/golden', import.meta.url)),
  ];
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
})();

/** The golden case folders, e.g. `goldenCase('tiny-moe')`. */
export function goldenCase(name: string): string {
  return `${GOLDEN_DIR}/${name}`;
}

export const GOLDEN_CASES = ['tiny-dense', 'tiny-moe', 'tiny-mxfp8', 'tiny-vl-sharded'] as const;
