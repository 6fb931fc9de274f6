/**
 * `keel run --mcp` and `keel mcp list` driven as subprocesses against a live API (the Node server
 * over the real Temporal and S3 servers, a worker process that sees server-everything's folder,
 * the local LLM server calling its tool by scenario).
 */
import { uniqueName } from "../../support/integration-env";
import { everythingServer, MCP_WORKER_ENV } from "../../support/mcp-servers";
import { createRunStage, type RunStage } from "../../support/run-harness";
import { type CliApi, runKeel, startCliApi } from "./keel-process";

const KEY = `cli-mcp-key-${uniqueName("k")}`;

let stage: RunStage;
let api: CliApi;
let env: Record<string, string>;

beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker(MCP_WORKER_ENV);
  api = await startCliApi(stage, { [KEY]: stage.tenantId });
  env = { KEEL_API_URL: api.url, KEEL_API_KEY: KEY };
});

afterAll(async () => {
  await api?.close();
  await stage?.close();
});

// Several `keel` processes (tsx each) on a shared 2-core machine.
jest.setTimeout(180_000);

const keel = (args: string[]) => runKeel(args, env);

test("run --mcp gives the run a stdio server whose tool the model calls; mcp list shows what the run recorded", async () => {
  stage.llm.addScenario("cli-mcp", {
    turns: [{ toolCalls: [{ name: "everything__echo", arguments: { message: "from the cli" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
  const sessionId = uniqueName("cli-mcp");
  const server = everythingServer();
  const spec = `everything=${server.command} ${(server.args ?? []).join(" ")}`;
  const run = await keel(["run", "[scenario:cli-mcp] go", "--session", sessionId, "--follow", "--mcp", spec]);
  expect(run).toMatchObject({ code: 0, stderr: "" });
  expect(run.stdout).toContain("Result: Echo: from the cli");
  expect(run.stdout).toMatch(/■ run completed/);

  const listed = await keel(["mcp", "list", sessionId]);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/^everything: \d+ tools$/m);
  expect(listed.stdout).toMatch(/^ {2}everything__echo {2}\[(safe|idempotent-with-check|unsafe)\]$/m);
  const json = await keel(["mcp", "list", sessionId, "--json"]);
  const answer = JSON.parse(json.stdout) as {
    servers: { server: string; status: string; tools: { name: string }[] }[];
  };
  expect(answer.servers).toHaveLength(1);
  expect(answer.servers[0]).toMatchObject({ server: "everything", status: "ready" });
  expect(answer.servers[0]?.tools.map((tool) => tool.name)).toContain("everything__get-sum");
});

test("a server down at start shows as unavailable with its reason; a session without servers says so", async () => {
  stage.llm.addScenario("cli-mcp-down", { turns: [{ text: "fine without it" }] });
  const sessionId = uniqueName("cli-mcp");
  const run = await keel([
    "run",
    "[scenario:cli-mcp-down] go",
    "--session",
    sessionId,
    "--follow",
    "--mcp",
    "broken=/nonexistent/server --flag",
  ]);
  expect(run.code).toBe(0);
  expect(run.stdout).toContain("  ✗ MCP server broken unavailable: MCP server broken is unavailable: ");
  const listed = await keel(["mcp", "list", sessionId]);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/^broken: unavailable: MCP server broken is unavailable: /m);

  const plain = uniqueName("cli-mcp");
  expect((await keel(["run", "no servers", "--session", plain, "--follow"])).code).toBe(0);
  expect((await keel(["mcp", "list", plain])).stdout).toBe(
    "no MCP servers (or the run has not listed them yet)\n",
  );
});

test("usage errors exit 2: --mcp without name=, mcp without list, a server name the API refuses (400)", async () => {
  const noName = await keel(["run", "x", "--mcp", "node server.js"]);
  expect(noName.code).toBe(2);
  expect(noName.stderr).toContain("--mcp needs name=command… or name=https://…");
  expect((await keel(["mcp", "show", "s"])).code).toBe(2);
  expect((await keel(["mcp", "list"])).code).toBe(2);
  const badName = await keel(["run", "x", "--mcp", "Bad__Name=node server.js"]);
  expect(badName.stderr).toMatch(/mcpServers\.0\.name/);
  expect(badName.code).toBe(2);
});
