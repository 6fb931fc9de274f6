/**
 * The model catalog: built-in entries from `models.json`, extended by a JSON file named in
 * `KEEL_MODELS_FILE` and by objects passed in code. Later sources replace earlier entries
 * with the same id.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import type { Cost, Usage } from "../core/messages";
import builtinCatalog from "./models.json";
import type { ModelInfo } from "./types";

const PER_MILLION = 1_000_000;

const ModelInfoSchema = z.object({
  id: z.string().min(1),
  provider: z.string().min(1),
  api: z.enum(["openai-completions", "openai-responses", "anthropic-messages"]),
  contextWindow: z.number().int().positive(),
  maxOutputTokens: z.number().int().positive(),
  prices: z.object({
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cacheRead: z.number().nonnegative(),
    cacheWrite: z.number().nonnegative(),
  }),
  reasoning: z.boolean(),
  imageInput: z.boolean(),
  baseUrl: z.string().optional(),
  textToolCalls: z.boolean().optional(),
});

const CatalogFileSchema = z.object({ models: z.array(ModelInfoSchema) });

export class ModelCatalog {
  private readonly byId = new Map<string, ModelInfo>();

  constructor(models: Iterable<ModelInfo>) {
    for (const model of models) this.byId.set(model.id, ModelInfoSchema.parse(model));
  }

  /** The entry for `id`, or undefined. */
  find(id: string): ModelInfo | undefined {
    return this.byId.get(id);
  }

  /** The entry for `id`; throws a configuration error naming the known ids when missing. */
  resolve(id: string): ModelInfo {
    const model = this.byId.get(id);
    if (!model) throw new Error(`Unknown model "${id}". Known models: ${[...this.byId.keys()].join(", ")}`);
    return model;
  }

  list(): ModelInfo[] {
    return [...this.byId.values()];
  }

  /** A new catalog with `models` added (replacing same-id entries). */
  extend(models: Iterable<ModelInfo>): ModelCatalog {
    return new ModelCatalog([...this.byId.values(), ...models]);
  }
}

/** Reads a catalog file (`{"models": [...]}`); throws with the file name when invalid. */
export function readModelsFile(path: string): ModelInfo[] {
  const parsed = CatalogFileSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`Invalid models file ${path}: ${parsed.error.message}`);
  return parsed.data.models;
}

/** Built-in models, then `modelsFile` (default `KEEL_MODELS_FILE`), then `extra`. */
export function loadCatalog(
  options: { modelsFile?: string; extra?: ModelInfo[]; env?: NodeJS.ProcessEnv } = {},
): ModelCatalog {
  const modelsFile = options.modelsFile ?? (options.env ?? process.env).KEEL_MODELS_FILE;
  const builtin = CatalogFileSchema.parse(builtinCatalog).models;
  return new ModelCatalog([
    ...builtin,
    ...(modelsFile ? readModelsFile(modelsFile) : []),
    ...(options.extra ?? []),
  ]);
}

let defaultCatalog: ModelCatalog | undefined;

/** Resolves `id` in the default catalog (built-ins + `KEEL_MODELS_FILE`, read once). */
export function resolveModel(id: string): ModelInfo {
  defaultCatalog ??= loadCatalog();
  return defaultCatalog.resolve(id);
}

/** Dollar cost of `usage` at the model's prices (per million tokens). */
export function computeCost(model: ModelInfo, usage: Omit<Usage, "cost">): Cost {
  const input = (model.prices.input * usage.input) / PER_MILLION;
  const output = (model.prices.output * usage.output) / PER_MILLION;
  const cacheRead = (model.prices.cacheRead * usage.cacheRead) / PER_MILLION;
  const cacheWrite = (model.prices.cacheWrite * usage.cacheWrite) / PER_MILLION;
  return { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite };
}
