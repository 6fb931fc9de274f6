/** KEEL_MODEL_URLS: its form, its check at worker start, and which base URLs an entry admits. */
import { apiConfigFromEnv } from "../../../src/api/config";
import { ModelUrlPolicy, parseModelUrls } from "../../../src/providers/model-urls";
import { workerConfigFromEnv } from "../../../src/worker/config";

describe("KEEL_MODEL_URLS", () => {
  it("parses entries with and without a key variable", () => {
    expect(parseModelUrls(" http://127.0.0.1:11434 , https://openrouter.ai/api/v1 OPENROUTER_KEY ")).toEqual([
      { url: "http://127.0.0.1:11434" },
      { url: "https://openrouter.ai/api/v1", keyVariable: "OPENROUTER_KEY" },
    ]);
    expect(parseModelUrls(undefined)).toEqual([]);
  });

  it.each(["ftp://h", "not a url at all", "http://u:p@h", "http://h/?key=x", "http://h sk-a b"])(
    "refuses %s",
    (text) => expect(() => parseModelUrls(text)).toThrow(/KEEL_MODEL_URLS/),
  );

  it("is checked at worker start, including that a named key variable is set", () => {
    const base = { KEEL_S3_BUCKET: "keel" };
    expect(() => workerConfigFromEnv({ ...base, KEEL_MODEL_URLS: "ftp://x" })).toThrow(/KEEL_MODEL_URLS/);
    expect(() => workerConfigFromEnv({ ...base, KEEL_MODEL_URLS: "https://gw.example GW_KEY" })).toThrow(
      /GW_KEY named as a key but not set/,
    );
    expect(
      workerConfigFromEnv({ ...base, KEEL_MODEL_URLS: "https://gw.example GW_KEY", GW_KEY: "k" }).providers
        ?.modelUrls,
    ).toEqual([{ url: "https://gw.example", keyVariable: "GW_KEY" }]);
  });

  it("is checked at API start, with KEEL_GIT_HOSTS", () => {
    const base = { KEEL_S3_BUCKET: "keel" };
    expect(() => apiConfigFromEnv({ ...base, KEEL_MODEL_URLS: "ftp://x" })).toThrow(
      /Invalid API configuration: KEEL_MODEL_URLS/,
    );
    expect(() => apiConfigFromEnv({ ...base, KEEL_GIT_HOSTS: "ssh://x" })).toThrow(
      /Invalid API configuration: KEEL_GIT_HOSTS/,
    );
    expect(
      apiConfigFromEnv({
        ...base,
        KEEL_MODEL_URLS: "http://10.0.0.5:8000",
        OPENAI_BASE_URL: "http://10.0.0.6/v1",
      }).outbound,
    ).toMatchObject({
      modelUrls: [{ url: "http://10.0.0.5:8000" }],
      providerBaseUrls: { openai: "http://10.0.0.6/v1" },
    });
  });

  it("an entry admits base URLs at or under it, on the same origin only", () => {
    const policy = new ModelUrlPolicy({ allowlist: parseModelUrls("http://10.0.0.5:8000"), configured: {} });
    const route = (url: string) => policy.route({ api: "openai-completions", baseUrl: url }).kind;
    expect(route("http://10.0.0.5:8000")).toBe("listed");
    expect(route("http://10.0.0.5:8000/v1")).toBe("listed");
    expect(route("http://10.0.0.5:8000/v1/")).toBe("listed");
    expect(route("http://10.0.0.5:8001/v1")).toBe("refused");
    expect(route("https://10.0.0.5:8000/v1")).toBe("refused");
    expect(route("http://10.0.0.5:8000/v1x")).toBe("refused");
    expect(route("http://10.0.0.5:8000.evil.example/v1")).toBe("refused");
  });
});
