import { fileURLToPath } from 'node:url';

/** The served name of the bundled model (`npm start`). */
export const BUNDLED_MODEL_NAME = 'moeserve-tiny-m3';

/** The bundled model's directory, shipped with the package. */
export const BUNDLED_MODEL_DIR = fileURLToPath(
  new URL('../../models/moeserve-tiny-m3', import.meta.url),
);
