/**
 * The model catalog: built-in entries from `models.json`, extended by a JSON file named in
 * `KEEL_MODELS_FILE` and by objects passed in code. Later sources replace earlier entries
 * with the same id. The models file is read again when it changes (no restart needed), and a
 * model named in one line (`openai-compatible:qwen3-coder@http://127.0.0.1:11434/v1`, see
 * model-spec.ts) is found without any entry.
 */
import { readFileSync, statSync } from "node:fs";
import { z } from "zod";
import type { Cost, Usage } from "../core/messages";
import { MODEL_SPEC_KINDS, modelFromSpec } from "./model-spec";
import builtinCatalog from "./models.json";
import type { ModelInfo } from "./types";

const PER_MILLION = 1_000_000;

const ModelInfoSchema = z.object({
  id: z.string().min(1),
  provider: z.string().min(1),
  api: z.enum(["openai-completions", "openai-responses", "anthropic-messages"]),
  contextWindow: z.number().int().positive(),
  maxOutputTokens: z.number().int().positive(),
  prices: z
    .object({
      input: z.number().nonnegative(),
      output: z.number().nonnegative(),
      cacheRead: z.number().nonnegative(),
      cacheWrite: z.number().nonnegative(),
    })
    .optional(),
  reasoning: z.boolean(),
  imageInput: z.boolean(),
  baseUrl: z.string().optional(),
  textToolCalls: z.boolean().optional(),
});

const CatalogFileSchema = z.object({ models: z.array(ModelInfoSchema) });

/** Where a catalog's file-based entries come from, so it can read the file again when it changes. */
interface CatalogSource {
  builtin: ModelInfo[];
  modelsFile: string;
  extra: ModelInfo[];
}

export class ModelCatalog {
  private byId = new Map<string, ModelInfo>();
  /** mtime and size of the models file when last read. */
  private fileVersion = "";
  /** Why the changed models file could not be used (the previous entries stay in force). */
  private fileError?: string;

  constructor(
    models: Iterable<ModelInfo>,
    private readonly source?: CatalogSource,
  ) {
    this.byId = indexById(models);
    if (source) this.fileVersion = fileVersion(source.modelsFile);
  }

  /** The entry for `id` (a catalog id or a one-line model spec), or undefined. */
  find(id: string): ModelInfo | undefined {
    this.refresh();
    return this.byId.get(id) ?? modelFromSpec(id);
  }

  /** The entry for `id`; throws an error that says how to add a missing model. */
  resolve(id: string): ModelInfo {
    const model = this.find(id);
    if (!model) throw new Error(this.unknownModelMessage(id));
    return model;
  }

  /** Why `id` is not a model, and the ways to make it one. */
  unknownModelMessage(id: string): string {
    const fileNote = this.fileError ? ` The models file could not be read again: ${this.fileError}.` : "";
    return (
      `Unknown model "${id}". Known models: ${[...this.byId.keys()].join(", ")}. ` +
      `For any other model, name it in one line as ${MODEL_SPEC_KINDS.map((kind) => `${kind}:<model>[@<base URL>]`).join(", ")} ` +
      `(e.g. openai-compatible:qwen3-coder@http://127.0.0.1:11434/v1), or add an entry to the JSON file named by ` +
      `KEEL_MODELS_FILE (read again when it changes, no restart needed).${fileNote}`
    );
  }

  list(): ModelInfo[] {
    this.refresh();
    return [...this.byId.values()];
  }

  /** A new catalog with `models` added (replacing same-id entries); it does not watch a file. */
  extend(models: Iterable<ModelInfo>): ModelCatalog {
    return new ModelCatalog([...this.list(), ...models]);
  }

  /** Reads the models file again when its mtime or size changed; keeps the old entries if it is invalid. */
  private refresh(): void {
    if (!this.source) return;
    const version = fileVersion(this.source.modelsFile);
    if (version === this.fileVersion) return;
    try {
      const fromFile = readModelsFile(this.source.modelsFile);
      this.byId = indexById([...this.source.builtin, ...fromFile, ...this.source.extra]);
      this.fileError = undefined;
    } catch (error) {
      this.fileError = error instanceof Error ? error.message : String(error);
    }
    this.fileVersion = version;
  }
}

function indexById(models: Iterable<ModelInfo>): Map<string, ModelInfo> {
  const byId = new Map<string, ModelInfo>();
  for (const model of models) byId.set(model.id, ModelInfoSchema.parse(model));
  return byId;
}

function fileVersion(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.mtimeMs}:${stat.size}`;
  } catch {
    return "missing";
  }
}

/** Reads a catalog file (`{"models": [...]}`); throws with the file name when invalid. */
function readModelsFile(path: string): ModelInfo[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`Invalid models file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = CatalogFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`Invalid models file ${path}: ${parsed.error.message}`);
  return parsed.data.models;
}

/** Built-in models, then `modelsFile` (the operator's KEEL_MODELS_FILE), then `extra`. */
export function loadCatalog(options: { modelsFile?: string; extra?: ModelInfo[] } = {}): ModelCatalog {
  const { modelsFile } = options;
  const builtin = CatalogFileSchema.parse(builtinCatalog).models;
  const extra = options.extra ?? [];
  if (!modelsFile) return new ModelCatalog([...builtin, ...extra]);
  return new ModelCatalog([...builtin, ...readModelsFile(modelsFile), ...extra], {
    builtin,
    modelsFile,
    extra,
  });
}

let defaultCatalog: ModelCatalog | undefined;

/** Resolves `id` among the built-in models (and one-line model ids). */
export function resolveModel(id: string): ModelInfo {
  defaultCatalog ??= loadCatalog();
  return defaultCatalog.resolve(id);
}

/** Dollar cost of `usage` at the model's prices (per million tokens). */
export function computeCost(model: ModelInfo, usage: Omit<Usage, "cost">): Cost {
  if (!model.prices) return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, unpriced: true };
  const input = (model.prices.input * usage.input) / PER_MILLION;
  const output = (model.prices.output * usage.output) / PER_MILLION;
  const cacheRead = (model.prices.cacheRead * usage.cacheRead) / PER_MILLION;
  const cacheWrite = (model.prices.cacheWrite * usage.cacheWrite) / PER_MILLION;
  return { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite };
}
