/**
 * Any OpenAI- or Anthropic-compatible server in one line: model specs, base URLs with or without
 * `/v1`, optional keys, unknown prices, a models file read again on change, errors that name the
 * fix, provider options from the worker's environment, and the API accepting the one-line form.
 */
import { mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runSettingsFrom } from "../../../src/api/run-settings";
import { messageBodySchema } from "../../../src/api/schemas";
import { type LocalLlmServer, startLocalLlmServer } from "../../../src/providers/local-server";
import { modelFromSpec, ONE_LINE_DEFAULTS, sdkBaseUrl } from "../../../src/providers/model-spec";
import { ModelUrlPolicy, parseModelUrls } from "../../../src/providers/model-urls";
import { loadCatalog } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import type { ModelInfo } from "../../../src/providers/types";
import { workerConfigFromEnv } from "../../../src/worker/config";

describe("one-line model specs", () => {
  it("reads kind, model name (with : and /) and optional base URL", () => {
    expect(modelFromSpec("openai-compatible:qwen3-coder:30b@http://127.0.0.1:11434/v1")).toMatchObject({
      id: "qwen3-coder:30b",
      api: "openai-completions",
      baseUrl: "http://127.0.0.1:11434/v1",
      ...ONE_LINE_DEFAULTS,
    });
    expect(modelFromSpec("openai-compatible:openai/gpt-4.1")).toMatchObject({ id: "openai/gpt-4.1" });
    expect(modelFromSpec("openai-compatible:openai/gpt-4.1")?.baseUrl).toBeUndefined();
    expect(modelFromSpec("anthropic-compatible:claude-x@https://gw.example/anthropic")).toMatchObject({
      api: "anthropic-messages",
    });
    expect(modelFromSpec("openai-responses:m")?.api).toBe("openai-responses");
    expect(modelFromSpec("openai-compatible:m")?.prices).toBeUndefined();
  });

  it.each([
    "gpt-5",
    "vllm:m",
    "openai-compatible:",
    "openai-compatible:a b",
    "openai-compatible:m@ftp://x",
    "openai-compatible:m@http://user:secret@h:1/v1",
    "openai-compatible:m@http://h:1/v1?key=secret",
  ])("%s is not a spec", (spec) => expect(modelFromSpec(spec)).toBeUndefined());

  it("takes base URLs with or without /v1", () => {
    expect(sdkBaseUrl("openai-completions", "http://h:1")).toBe("http://h:1/v1");
    expect(sdkBaseUrl("openai-completions", "http://h:1/v1/")).toBe("http://h:1/v1");
    expect(sdkBaseUrl("openai-responses", "https://openrouter.ai/api/v1")).toBe(
      "https://openrouter.ai/api/v1",
    );
    expect(sdkBaseUrl("anthropic-messages", "http://h:1/v1")).toBe("http://h:1");
    expect(sdkBaseUrl("anthropic-messages", "http://h:1")).toBe("http://h:1");
  });
});

describe("the catalog", () => {
  const folder = mkdtempSync(join(tmpdir(), "keel-models-"));
  const entry = (id: string): ModelInfo => ({
    id,
    provider: "vllm",
    api: "openai-completions",
    contextWindow: 65_536,
    maxOutputTokens: 8_192,
    reasoning: false,
    imageInput: false,
  });
  const write = (file: string, text: string, mtime: number) => {
    writeFileSync(file, text);
    utimesSync(file, mtime, mtime);
  };

  it("finds one-line models, and says how to add an unknown one", () => {
    const catalog = loadCatalog();
    expect(catalog.find("openai-compatible:m@http://x:1")?.id).toBe("m");
    expect(() => catalog.resolve("qwen3")).toThrow(
      /openai-compatible:<model>\[@<base URL>\].*KEEL_MODELS_FILE/s,
    );
  });

  it("reads the models file again when it changes; an invalid rewrite keeps the entries and is reported", () => {
    const file = join(folder, "models.json");
    write(file, JSON.stringify({ models: [entry("first")] }), 1_000);
    const catalog = loadCatalog({ modelsFile: file });
    expect(catalog.find("first")?.contextWindow).toBe(65_536);
    expect(catalog.find("second")).toBeUndefined();

    write(file, JSON.stringify({ models: [entry("first"), entry("second")] }), 2_000);
    expect(catalog.find("second")?.maxOutputTokens).toBe(8_192);

    write(file, "{ not json", 3_000);
    expect(catalog.find("second")).toBeDefined();
    expect(catalog.unknownModelMessage("third")).toMatch(/could not be read again: Invalid models file/);
  });

  it("an entry without prices gives an unpriced cost, not a free one", async () => {
    const server = await startLocalLlmServer();
    try {
      const model = { ...entry("local-chat"), baseUrl: server.url };
      const provider = createProvider({ env: {}, catalog: loadCatalog({ extra: [model] }) });
      const { message } = await provider.complete(model, {
        messages: [{ role: "user", content: "hi", timestamp: 0 }],
      });
      expect(message.usage.input).toBeGreaterThan(0);
      expect(message.usage.cost).toEqual({
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        total: 0,
        unpriced: true,
      });
    } finally {
      await server.close();
    }
  });
});

describe("keys and base URLs", () => {
  let server: LocalLlmServer;
  beforeAll(async () => {
    server = await startLocalLlmServer();
  });
  afterAll(() => server.close());

  it.each([
    ["openai-compatible", "", "openai-completions"],
    ["openai-compatible", "/v1", "openai-completions"],
    ["openai-responses", "", "openai-responses"],
    ["anthropic-compatible", "/v1", "anthropic-messages"],
    ["anthropic-compatible", "", "anthropic-messages"],
  ])("%s with base URL …%s and no key", async (kind, suffix, api) => {
    const model = loadCatalog().resolve(`${kind}:local-model@${server.url}${suffix}`);
    // The operator lists the server (without a key: it needs none).
    const { message, error } = await createProvider({ env: { KEEL_MODEL_URLS: server.url } }).complete(
      model,
      {
        messages: [{ role: "user", content: "hello", timestamp: 0 }],
      },
    );
    expect(error).toBeUndefined();
    expect(message).toMatchObject({
      api,
      model: "local-model",
      content: [{ type: "text", text: "You said: hello" }],
    });
    const last = server.journal().at(-1);
    expect(last?.model).toBe("local-model");
  });

  it("without key or base URL, the error says what to set", async () => {
    const { error } = await createProvider({ env: {} }).complete(modelFromSpec("openai-compatible:m")!, {
      messages: [{ role: "user", content: "x", timestamp: 0 }],
    });
    expect(error?.message).toMatch(/OPENAI_API_KEY.*OPENAI_BASE_URL/);
  });
});

describe("provider options from the worker's environment", () => {
  const S3_ENV = { KEEL_S3_BUCKET: "keel" };

  it("reads stream, timeouts, headers and prompt caching", () => {
    const config = workerConfigFromEnv({
      ...S3_ENV,
      KEEL_OPENAI_STREAM: "false",
      KEEL_OPENAI_TIMEOUT_MS: "120000",
      KEEL_OPENAI_HEADERS: '{"HTTP-Referer":"https://keel.example","X-Title":"keel"}',
      KEEL_ANTHROPIC_PROMPT_CACHING: "0",
      KEEL_ANTHROPIC_TIMEOUT_MS: "90000",
    });
    expect(config.providers?.openai).toEqual({
      stream: false,
      timeoutMs: 120_000,
      headers: { "HTTP-Referer": "https://keel.example", "X-Title": "keel" },
    });
    expect(config.providers?.anthropic).toEqual({ promptCaching: false, timeoutMs: 90_000 });
  });

  it("an invalid headers value is named without echoing it", () => {
    const problem = (() => {
      try {
        workerConfigFromEnv({
          ...S3_ENV,
          KEEL_ANTHROPIC_HEADERS: '{"Authorization": "Bearer secret-token-xyz"',
        });
      } catch (error) {
        return (error as Error).message;
      }
      return "no error";
    })();
    expect(problem).toMatch(/KEEL_ANTHROPIC_HEADERS: must be a JSON object/);
    expect(problem).not.toContain("secret-token-xyz");
  });
});

describe("the API's model check", () => {
  const body = messageBodySchema({
    modelIds: loadCatalog()
      .list()
      .map((model) => model.id),
    allowDirectoryWorkspaces: false,
    modelUrls: new ModelUrlPolicy({ allowlist: parseModelUrls("http://127.0.0.1:11434"), configured: {} }),
  });

  it("accepts a one-line model on a listed URL", () => {
    const spec = "openai-compatible:qwen3-coder@http://127.0.0.1:11434/v1";
    expect(runSettingsFrom(body.parse({ text: "x", model: spec })).model).toBe(spec);
  });

  it("refuses an unknown model, or a one-line model with credentials, with the fix in the message", () => {
    const unknown = body.safeParse({ text: "x", model: "qwen3-coder" });
    expect(unknown.success).toBe(false);
    expect(JSON.stringify(unknown.error?.issues)).toMatch(/openai-compatible:<model>/);
    expect(body.safeParse({ text: "x", model: "openai-compatible:m@http://u:p@host/v1" }).success).toBe(
      false,
    );
  });
});
