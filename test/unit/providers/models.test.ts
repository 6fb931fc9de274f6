import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { computeCost, loadCatalog } from "../../../src/providers/models";
import type { ModelInfo } from "../../../src/providers/types";

const custom: ModelInfo = {
  id: "qwen3-coder",
  provider: "vllm",
  api: "openai-completions",
  contextWindow: 32768,
  maxOutputTokens: 4096,
  prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  reasoning: false,
  imageInput: false,
  baseUrl: "http://127.0.0.1:8000/v1",
  textToolCalls: true,
};

describe("model catalog", () => {
  test("built-ins cover OpenAI, Anthropic and the local test models", () => {
    const providers = new Set(
      loadCatalog()
        .list()
        .map((model) => model.provider),
    );
    expect(providers).toEqual(new Set(["openai", "anthropic", "local"]));
  });

  test("KEEL_MODELS_FILE adds and overrides entries; extra objects win last", () => {
    const dir = mkdtempSync(join(tmpdir(), "keel-models-"));
    const file = join(dir, "models.json");
    const cheaperSonnet = {
      ...loadCatalog().resolve("claude-sonnet-4-5"),
      contextWindow: 1_000_000,
    };
    writeFileSync(file, JSON.stringify({ models: [custom, cheaperSonnet] }));
    const catalog = loadCatalog({
      modelsFile: file,
      extra: [{ ...custom, maxOutputTokens: 8192 }],
    });
    expect(catalog.resolve("claude-sonnet-4-5").contextWindow).toBe(1_000_000);
    expect(catalog.resolve("qwen3-coder")).toEqual({ ...custom, maxOutputTokens: 8192 });
  });

  test("an invalid models file names the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "keel-models-"));
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ models: [{ id: "x" }] }));
    expect(() => loadCatalog({ modelsFile: file })).toThrow(file);
  });

  test("computeCost prices each token class per million", () => {
    const sonnet = loadCatalog().resolve("claude-sonnet-4-5");
    const cost = computeCost(sonnet, {
      input: 1_000_000,
      output: 2_000,
      cacheRead: 500_000,
      cacheWrite: 10_000,
      totalTokens: 0,
    });
    expect(cost.input).toBeCloseTo(3, 10);
    expect(cost.output).toBeCloseTo(0.03, 10);
    expect(cost.cacheRead).toBeCloseTo(0.15, 10);
    expect(cost.cacheWrite).toBeCloseTo(0.0375, 10);
    expect(cost.total).toBeCloseTo(3.2175, 10);
  });
});
