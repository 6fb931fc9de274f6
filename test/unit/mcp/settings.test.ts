import { messageBodySchema } from "../../../src/api/schemas";
import { mcpServerFrom } from "../../../src/cli/commands/message";
import { mcpPolicyFromEnv } from "../../../src/mcp/policy";
import { mcpServersSchema } from "../../../src/mcp/schema";
import {
  findMcpTool,
  mcpToolSpecs,
  mcpToolsForTurn,
  replayClassOf,
  splitMcpToolName,
} from "../../../src/mcp/tool-names";
import { decidePolicy } from "../../../src/workflows/policy";

const policy = { privateHosts: ["mcp.internal"] };
const schema = mcpServersSchema(policy);

test("a stdio and an HTTP server with secrets by reference are accepted", () => {
  const servers = [
    {
      name: "fs",
      command: "node",
      args: ["server.js", "/workspace"],
      env: { TOKEN: { secret: "GITHUB_TOKEN" }, MODE: "x" },
    },
    {
      name: "tracker_1",
      url: "https://mcp.example.com/mcp",
      headers: { Authorization: { secret: "GITHUB_TOKEN" } },
    },
    { name: "inside", url: "http://mcp.internal:8080/mcp" },
  ];
  expect(schema.safeParse(servers).success).toBe(true);
});

test.each([
  ["a name with capitals", [{ name: "Files", command: "x" }]],
  ["a name with the separator", [{ name: "a__b", command: "x" }]],
  [
    "a secret's name that is not an upper-case variable name",
    [{ name: "a", command: "x", env: { K: { secret: "openai_api_key" } } }],
  ],
  [
    "a header secret's name the sandbox reserves",
    [{ name: "a", url: "https://h.example/", headers: { X: { secret: "KEEL_API_KEY" } } }],
  ],
  ["a loopback URL", [{ name: "a", url: "http://127.0.0.1:9000/mcp" }]],
  ["the metadata endpoint", [{ name: "a", url: "http://169.254.169.254/latest" }]],
  ["localhost", [{ name: "a", url: "http://localhost:9000/mcp" }]],
  ["an IPv4-mapped loopback", [{ name: "a", url: "http://[::ffff:127.0.0.1]/mcp" }]],
  ["credentials in the URL", [{ name: "a", url: "https://user:pw@h.example/mcp" }]],
  ["a file URL", [{ name: "a", url: "file:///etc/passwd" }]],
  ["both command and url", [{ name: "a", command: "x", url: "https://h.example/" }]],
])("refused: %s", (_what, servers) => {
  expect(schema.safeParse(servers).success).toBe(false);
});

test("the message body takes mcpServers, with the deployment's policy", () => {
  const body = messageBodySchema({ modelIds: ["m"], allowDirectoryWorkspaces: false, mcp: policy });
  expect(body.safeParse({ text: "hi", mcpServers: [{ name: "t", command: "python3" }] }).success).toBe(true);
  const strict = messageBodySchema({ modelIds: ["m"], allowDirectoryWorkspaces: false });
  // `{secret}` names a tenant secret (the route checks the tenant has it); the name's rules hold here.
  expect(
    strict.safeParse({
      text: "hi",
      mcpServers: [{ name: "t", command: "x", env: { K: { secret: "GITHUB_TOKEN" } } }],
    }).success,
  ).toBe(true);
  const refused = strict.safeParse({
    text: "hi",
    mcpServers: [{ name: "t", command: "x", env: { K: { secret: "github_token" } } }],
  });
  expect(refused.success).toBe(false);
  expect(JSON.stringify(refused.error)).toContain("upper-case environment variable name");
});

test("the policy is read from the environment", () => {
  expect(mcpPolicyFromEnv({ KEEL_MCP_HOSTS: "Mcp.Internal." })).toEqual({ privateHosts: ["mcp.internal"] });
});

test("replay classes come from annotations unless the operator overrides them", () => {
  expect(replayClassOf("t", { readOnlyHint: true }, undefined)).toBe("safe");
  expect(replayClassOf("t", { readOnlyHint: false, idempotentHint: true }, undefined)).toBe(
    "idempotent-with-check",
  );
  expect(replayClassOf("t", { destructiveHint: true }, undefined)).toBe("unsafe");
  expect(replayClassOf("t", undefined, undefined)).toBe("unsafe");
  expect(replayClassOf("t", { readOnlyHint: true }, { t: "unsafe" })).toBe("unsafe");
});

test("model-facing names are <server>__<tool>; unavailable servers offer nothing", () => {
  expect(splitMcpToolName("fs__read_file")).toEqual({ server: "fs", tool: "read_file" });
  expect(splitMcpToolName("everything__get-sum")).toEqual({ server: "everything", tool: "get-sum" });
  expect(splitMcpToolName("read")).toBeUndefined();
  const list = {
    servers: [
      {
        server: "fs",
        status: "ready" as const,
        tools: [
          { tool: "read_file", description: "d", inputSchema: { type: "object" }, replay: "safe" as const },
        ],
      },
      { server: "down", status: "unavailable" as const, error: "spawn failed" },
    ],
  };
  expect(mcpToolSpecs(list)).toEqual([
    { name: "fs__read_file", description: "d", parameters: { type: "object" } },
  ]);
  expect(findMcpTool(list, "fs__read_file")?.entry.replay).toBe("safe");
  expect(findMcpTool(list, "down__x")).toBeUndefined();
});

test("a model call names the listings by digest when every ready one was stored, else carries the list", () => {
  const tools = [{ tool: "echo", description: "d", inputSchema: {}, replay: "safe" as const }];
  const stored = {
    servers: [
      { server: "a", status: "ready" as const, tools, digest: "1".repeat(64) },
      { server: "down", status: "unavailable" as const, error: "spawn failed" },
    ],
  };
  expect(mcpToolsForTurn(stored)).toEqual({ mcpToolRefs: [{ server: "a", digest: "1".repeat(64) }] });
  const older = { servers: [...stored.servers, { server: "b", status: "ready" as const, tools }] };
  expect(mcpToolsForTurn(older)).toEqual({ mcpTools: older });
  expect(mcpToolsForTurn(undefined)).toEqual({});
});

test("keel run --mcp: a command with its arguments, or an HTTP URL", () => {
  expect(mcpServerFrom("fs=node /opt/fs/index.js /workspace")).toEqual({
    name: "fs",
    command: "node",
    args: ["/opt/fs/index.js", "/workspace"],
  });
  expect(mcpServerFrom("tracker=https://mcp.example.com/mcp")).toEqual({
    name: "tracker",
    url: "https://mcp.example.com/mcp",
  });
  expect(() => mcpServerFrom("no-equals")).toThrow(/--mcp/);
  expect(() => mcpServerFrom("=node x")).toThrow(/--mcp/);
});

test("policy rules name MCP tools exactly, or every tool of a server with <server>__*", () => {
  const policy = {
    rules: [
      { tool: "fs__write_file", action: "ask" as const },
      { tool: "fs__*", action: "allow" as const },
      { tool: "everything__*", argumentsPattern: "secret", action: "deny" as const },
    ],
    default: "deny" as const,
    approvalTimeoutMs: 1_000,
  };
  expect(decidePolicy(policy, "fs__write_file", "{}")).toBe("ask");
  expect(decidePolicy(policy, "fs__read_text_file", "{}")).toBe("allow");
  expect(decidePolicy(policy, "everything__echo", '{"message":"secret"}')).toBe("deny");
  expect(decidePolicy(policy, "fsx__read", "{}")).toBe("deny");
  expect(decidePolicy(policy, "bash", "{}")).toBe("deny");
});
