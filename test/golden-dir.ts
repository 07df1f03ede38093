import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The golden cases bundled with the project (a copy of shared/golden; test/shared-sync.test.ts keeps them in step). */
export const BUNDLED_GOLDEN_DIR: string = fileURLToPath(
  new URL('./fixtures/golden', import.meta.url),
);

/**
 * The shared checkout (`MOESERVE_SHARED`, else <clone>/../shared) when it exists, else undefined.
 * A fresh clone has none: the bundled fixtures are then the only copy.
 */
export const SHARED_DIR: string | undefined = (() => {
  const p =
    process.env['MOESERVE_SHARED'] || fileURLToPath(new URL('../../shared', import.meta.url));
  return existsSync(p) ? p : undefined;
})();

/** `SHARED_DIR/golden` when it exists. */
export const SHARED_GOLDEN_DIR: string | undefined =
  SHARED_DIR && existsSync(`${SHARED_DIR}/golden`) ? `${SHARED_DIR}/golden` : undefined;

/** The golden checkpoints the tests read: `MOESERVE_GOLDEN` wins, else the bundled fixtures. */
export const GOLDEN_DIR: string = process.env['MOESERVE_GOLDEN'] || BUNDLED_GOLDEN_DIR;

/** The golden case folders, e.g. `goldenCase('tiny-moe')`. */
export function goldenCase(name: string): string {
  return `${GOLDEN_DIR}/${name}`;
}

export const GOLDEN_CASES = ['tiny-dense', 'tiny-moe', 'tiny-mxfp8', 'tiny-vl-sharded'] as const;
