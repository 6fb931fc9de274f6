import { runSettingsFrom } from "../../../src/api/run-settings";
import { messageBodySchema } from "../../../src/api/schemas";
import { withTenantSettings } from "../../../src/api/tenant-runs";
import { DEFAULT_RUN_SETTINGS } from "../../../src/contracts/runs";
import { loadCatalog } from "../../../src/providers/models";

describe("run settings from a message body", () => {
  const modelIds = loadCatalog()
    .list()
    .map((model) => model.id);
  const schemaFor = (allowDirectoryWorkspaces: boolean) =>
    messageBodySchema({ modelIds, allowDirectoryWorkspaces });
  const MessageBodySchema = schemaFor(false);
  const settingsOf = (body: unknown, allowDirectoryWorkspaces = false) =>
    runSettingsFrom(schemaFor(allowDirectoryWorkspaces).parse(body));

  test("model: a list is the first model and its fallbacks in order, each once; a string stays one model", () => {
    expect(
      settingsOf({ text: "x", model: ["local-anthropic", "local-chat", "local-anthropic"] }),
    ).toMatchObject({
      model: "local-anthropic",
      fallbackModels: ["local-chat"],
    });
    const single = settingsOf({ text: "x", model: ["local-chat"] });
    expect(single.model).toBe("local-chat");
    expect(single.fallbackModels).toBeUndefined();
    expect(settingsOf({ text: "x", model: "local-chat" }).fallbackModels).toBeUndefined();
    // Every model of the list is checked like one; an empty or overlong list is refused.
    for (const model of [[], ["local-chat", "nope"], Array(6).fill("local-chat")])
      expect(MessageBodySchema.safeParse({ text: "x", model }).success).toBe(false);
  });

  test("MCP servers: one per name, a later one of the same name replacing an earlier one", () => {
    const settings = settingsOf({
      text: "x",
      mcpServers: [
        { name: "a", command: "first" },
        { name: "b", url: "https://mcp.example.com/b" },
        { name: "a", command: "second" },
      ],
    });
    expect(settings.mcpServers).toEqual([
      { name: "a", command: "second" },
      { name: "b", url: "https://mcp.example.com/b" },
    ]);
    // Addresses the server refuses are outside the document's URL pattern too.
    for (const url of [
      "http://127.0.0.1/mcp",
      "http://localhost:8080/",
      "https://user@mcp.example.com/",
      "ftp://a.b/",
    ])
      expect(MessageBodySchema.safeParse({ text: "x", mcpServers: [{ name: "a", url }] }).success).toBe(
        false,
      );
  });

  test("defaults, then the caller's choices", () => {
    expect(settingsOf({ text: "x" })).toEqual(DEFAULT_RUN_SETTINGS);
    const settings = settingsOf({
      text: "x",
      model: "local-chat",
      systemPrompt: "be brief",
      tools: ["read", "read", "ls"],
      policy: { rules: [{ tool: "bash", argumentsPattern: "rm ", action: "deny" }], default: "ask" },
      workspace: { type: "git", url: "https://github.com/example/repo.git", ref: "main" },
    });
    expect(settings).toMatchObject({
      model: "local-chat",
      systemPrompt: "be brief",
      tools: ["read", "ls"],
      policy: { rules: [{ tool: "bash", argumentsPattern: "rm ", action: "deny" }], default: "ask" },
      workspace: { type: "git", url: "https://github.com/example/repo.git", ref: "main" },
    });
    expect(settings.policy.approvalTimeoutMs).toBe(DEFAULT_RUN_SETTINGS.policy.approvalTimeoutMs);
  });

  test("unknown models and worker-disk workspaces are refused unless enabled", () => {
    expect(() => settingsOf({ text: "x", model: "nope" })).toThrow(/model/);
    expect(() => settingsOf({ text: "x", workspace: { type: "directory", path: "/srv" } })).toThrow(
      /directory|type/,
    );
    expect(() => settingsOf({ text: "x", workspace: { type: "git", url: "/srv/repo" } })).toThrow(
      /must be https:\/\/ URLs/,
    );
    expect(settingsOf({ text: "x", workspace: { type: "git", url: "/srv/repo" } }, true).workspace).toEqual({
      type: "git",
      url: "/srv/repo",
    });
    expect(settingsOf({ text: "x", workspace: { type: "directory", path: "/srv" } }, true).workspace).toEqual(
      {
        type: "directory",
        path: "/srv",
      },
    );
  });

  test("network: none, full and host allowlists are kept; addresses and malformed hosts are refused", () => {
    expect(settingsOf({ text: "x" }).network).toBeUndefined();
    expect(settingsOf({ text: "x", network: "none" }).network).toBe("none");
    // "full" is in the document only where the deployment offers it to some tenant.
    expect(MessageBodySchema.safeParse({ text: "x", network: "full" }).success).toBe(false);
    const offered = messageBodySchema({
      modelIds,
      allowDirectoryWorkspaces: false,
      fullNetworkOffered: true,
    });
    expect(runSettingsFrom(offered.parse({ text: "x", network: "full" })).network).toBe("full");
    const allow = ["registry.npmjs.org", "*.pypi.org", "git.example.com:8443"];
    expect(settingsOf({ text: "x", network: { allow } }).network).toEqual({ allow });
    for (const bad of [
      ["a b"],
      ["169.254.169.254"],
      ["localhost"],
      [],
      ["x.com"].concat(Array(50).fill("y.com")),
    ])
      expect(MessageBodySchema.safeParse({ text: "x", network: { allow: bad } }).success).toBe(false);
    expect(MessageBodySchema.safeParse({ text: "x", network: "some" }).success).toBe(false);
    expect(MessageBodySchema.safeParse({ text: "x", network: { allow: allow, extra: 1 } }).success).toBe(
      false,
    );
  });

  test("the schema refuses bad regexes, unknown tools and option-like git arguments", () => {
    const invalid = [
      { text: "x", policy: { rules: [{ tool: "bash", argumentsPattern: "(", action: "ask" }] } },
      { text: "x", tools: ["rm"] },
      { text: "x", workspace: { type: "git", url: "--upload-pack=evil" } },
      { text: "x", workspace: { type: "git", url: "https://e.com/r", ref: "-x" } },
      { text: "" },
    ];
    for (const body of invalid) expect(MessageBodySchema.safeParse(body).success).toBe(false);
  });
});

describe("a tenant's allowed models and a list of models", () => {
  const options = { modelIds: ["local-chat", "local-anthropic"], allowDirectoryWorkspaces: false };

  test("every model of the list must be allowed: one refused model refuses the message", () => {
    const settings = { models: ["local-chat"] };
    expect(() =>
      withTenantSettings(settings, { model: ["local-chat", "local-anthropic"] }, options, "local-chat"),
    ).toThrow(/"local-anthropic" is not among this tenant's allowed models/);
    expect(withTenantSettings(settings, { model: ["local-chat"] }, options, "local-chat").model).toEqual([
      "local-chat",
    ]);
  });

  test("a tenant's default may be a list, checked the same way", () => {
    const settings = { models: ["local-*"], defaults: { model: ["local-anthropic", "local-chat"] } };
    expect(withTenantSettings(settings, { model: undefined }, options, "gpt-5").model).toEqual([
      "local-anthropic",
      "local-chat",
    ]);
    expect(() =>
      withTenantSettings(
        { ...settings, models: ["local-anthropic"] },
        { model: undefined },
        options,
        "gpt-5",
      ),
    ).toThrow(/"local-chat"/);
  });
});
