/**
 * Who gets the operator's provider keys. A recording HTTP server stands in for a server a caller
 * names: without the operator's say it receives nothing at all; listed without a key it receives
 * only the placeholder; with a key bound to its entry it receives that key and no other.
 */
import type { LlmContext } from "../../../src/core/messages";
import { modelFromSpec } from "../../../src/providers/model-spec";
import { loadCatalog } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import type { ModelInfo } from "../../../src/providers/types";
import { type Recorder, startRecorder } from "../../support/recording-server";

const OPERATOR_KEY = "sk-operator-secret";
const context: LlmContext = { messages: [{ role: "user", content: "hi", timestamp: 0 }] };

let attacker: Recorder;
beforeEach(async () => {
  attacker = await startRecorder();
});
afterEach(() => attacker.close());

const env = (extra: Record<string, string> = {}) => ({
  OPENAI_API_KEY: OPERATOR_KEY,
  ANTHROPIC_API_KEY: OPERATOR_KEY,
  ...extra,
});

describe.each(["openai-compatible", "openai-responses", "anthropic-compatible"])("%s", (kind) => {
  const spec = (url: string) => modelFromSpec(`${kind}:m@${url}`)!;

  it("a base URL the operator did not allow gets no request: a non-retryable error result", async () => {
    const { error } = await createProvider({ env: env() }).complete(spec(attacker.url), context);
    expect(error).toMatchObject({ kind: "non_retryable", message: expect.stringMatching(/KEEL_MODEL_URLS/) });
    expect(attacker.requests).toEqual([]);
  });

  it("a listed base URL that is not the configured one gets the placeholder, never the operator's key", async () => {
    const provider = createProvider({ env: env({ KEEL_MODEL_URLS: attacker.url }) });
    await provider.complete(spec(attacker.url), context);
    expect(attacker.requests).toHaveLength(1);
    const sent = JSON.stringify(attacker.requests[0]);
    expect(sent).not.toContain(OPERATOR_KEY);
    expect(sent).toContain("not-needed");
  });

  it("a key bound to a listed entry goes there, and only that key", async () => {
    const provider = createProvider({
      env: env({ KEEL_MODEL_URLS: `${attacker.url} GATEWAY_KEY`, GATEWAY_KEY: "sk-gateway" }),
    });
    await provider.complete(spec(attacker.url), context);
    const sent = JSON.stringify(attacker.requests[0]);
    expect(sent).toContain("sk-gateway");
    expect(sent).not.toContain(OPERATOR_KEY);
  });

  it("the configured base URL gets the operator's key", async () => {
    const family = kind.startsWith("anthropic") ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL";
    await createProvider({ env: env({ [family]: attacker.url }) }).complete(spec(attacker.url), context);
    expect(JSON.stringify(attacker.requests[0])).toContain(OPERATOR_KEY);
  });
});

it("a catalog model's base URL gets its family's key; the other family's key does not follow it", async () => {
  const entry: ModelInfo = {
    ...modelFromSpec("openai-compatible:m")!,
    id: "catalogued",
    provider: "vllm",
    baseUrl: attacker.url,
  };
  const provider = createProvider({
    env: { OPENAI_API_KEY: "sk-openai", ANTHROPIC_API_KEY: "sk-anthropic" },
    catalog: loadCatalog({ extra: [entry] }),
  });
  await provider.complete(entry, context);
  expect(JSON.stringify(attacker.requests[0])).toContain("sk-openai");
  const { error } = await provider.complete(
    modelFromSpec(`anthropic-compatible:m@${attacker.url}`)!,
    context,
  );
  expect(error?.kind).toBe("non_retryable");
  expect(attacker.requests).toHaveLength(1);
});

it("a listed server redirecting to a name that resolves to loopback is refused at connect time", async () => {
  const listed = await startRecorder({
    redirectTo: () => `http://localhost:${new URL(attacker.url).port}/v1/chat/completions`,
  });
  try {
    const provider = createProvider({ env: env({ KEEL_MODEL_URLS: listed.url }) });
    const { error } = await provider.complete(modelFromSpec(`openai-compatible:m@${listed.url}`)!, context);
    expect(listed.requests).toHaveLength(1);
    expect(attacker.requests).toEqual([]);
    expect(error).toMatchObject({
      kind: "non_retryable",
      message: expect.stringMatching(/localhost resolves to/),
    });
  } finally {
    await listed.close();
  }
});
