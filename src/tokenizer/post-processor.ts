/** Adds the special tokens a tokenizer.json post-processor wraps a single sequence in. */
export type PostProcessor = (ids: number[]) => number[];

interface TemplatePiece {
  SpecialToken?: { id: string };
  Sequence?: { id: string };
}

interface PostProcessorConfig {
  type: string;
  processors?: PostProcessorConfig[];
  single?: TemplatePiece[];
  special_tokens?: Record<string, { ids: number[] }>;
  cls?: [string, number];
  sep?: [string, number];
}

/** Builds the single-sequence post-processor; ByteLevel (offsets only) is a no-op. */
export function buildPostProcessor(config: unknown): PostProcessor {
  if (config === null || config === undefined) return (ids) => ids;
  const c = config as PostProcessorConfig;
  switch (c.type) {
    case 'ByteLevel':
      return (ids) => ids;
    case 'TemplateProcessing':
      return templateProcessor(c);
    case 'RobertaProcessing':
    case 'BertProcessing':
      if (!c.cls || !c.sep) throw new Error(`${c.type} without cls/sep`);
      return (ids) => [c.cls![1], ...ids, c.sep![1]];
    case 'Sequence': {
      const steps = (c.processors ?? []).map(buildPostProcessor);
      return (ids) => steps.reduce((acc, step) => step(acc), ids);
    }
    default:
      throw new Error(`unsupported tokenizer post-processor: ${c.type}`);
  }
}

function templateProcessor(c: PostProcessorConfig): PostProcessor {
  const pieces = c.single ?? [{ Sequence: { id: 'A' } }];
  return (ids) =>
    pieces.flatMap((p) => {
      if (p.Sequence) return ids;
      const name = p.SpecialToken?.id ?? '';
      const special = c.special_tokens?.[name];
      if (!special) throw new Error(`TemplateProcessing: unknown special token ${name}`);
      return special.ids;
    });
}
