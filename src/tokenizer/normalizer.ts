/** A tokenizer.json normalizer as a function. */
export type Normalizer = (text: string) => string;

interface NormalizerConfig {
  type: string;
  normalizers?: NormalizerConfig[];
}

/** Builds the normalizer of a tokenizer.json; throws on kinds byte-level models do not use. */
export function buildNormalizer(config: unknown): Normalizer {
  if (config === null || config === undefined) return (t) => t;
  const c = config as NormalizerConfig;
  switch (c.type) {
    case 'NFC':
    case 'NFD':
    case 'NFKC':
    case 'NFKD':
      return (t) => t.normalize(c.type);
    case 'Lowercase':
      return (t) => t.toLowerCase();
    case 'Sequence': {
      const steps = (c.normalizers ?? []).map(buildNormalizer);
      return (t) => steps.reduce((acc, step) => step(acc), t);
    }
    default:
      throw new Error(`unsupported tokenizer normalizer: ${c.type}`);
  }
}
