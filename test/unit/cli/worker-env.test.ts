/** `keel dev` passes the caller's worker settings on to its worker, and the variables they name. */
import { workerPassThrough } from "../../../src/cli/devstack/worker-env";

test("the worker settings the docs name reach the worker; the stack's own are left to it", () => {
  const passed = workerPassThrough({
    PATH: "/usr/bin",
    HOME: "/home/me",
    KEEL_MCP_MOUNTS: "/opt/node_modules",
    KEEL_MCP_HOSTS: "127.0.0.1",
    GITHUB_TOKEN: "ghp_secret",
    KEEL_SANDBOX_PASS_ENV: "LANG",
    LANG: "C.UTF-8",
    KEEL_SANDBOX_MEMORY_MB: "2048",
    KEEL_SNAPSHOT_MAX_BYTES: "1000000",
    KEEL_OTEL_METRICS_INTERVAL_MS: "500",
    KEEL_MODEL_URLS: "https://models.example.com/v1 EXAMPLE_KEY",
    EXAMPLE_KEY: "k",
    // Set by the stack itself (its own servers, bundle and workspaces).
    KEEL_TEMPORAL_ADDRESS: "elsewhere:7233",
    KEEL_TASK_QUEUE: "other",
    KEEL_WORKFLOW_BUNDLE: "/tmp/b.js",
    KEEL_WORKSPACE_ROOT: "/tmp/ws",
    // Not a worker setting.
    KEEL_API_PORT: "9999",
    UNRELATED: "x",
  });
  expect(passed.env).toEqual({
    KEEL_MCP_MOUNTS: "/opt/node_modules",
    KEEL_MCP_HOSTS: "127.0.0.1",
    KEEL_SANDBOX_PASS_ENV: "LANG",
    LANG: "C.UTF-8",
    KEEL_SANDBOX_MEMORY_MB: "2048",
    KEEL_SNAPSHOT_MAX_BYTES: "1000000",
    KEEL_OTEL_METRICS_INTERVAL_MS: "500",
    EXAMPLE_KEY: "k",
  });
  // What the start message names: names only, never values.
  expect(passed.names).toEqual(Object.keys(passed.env).sort());
  expect(passed.names.join(" ")).not.toContain("ghp_secret");
});

test("nothing set, nothing passed", () => {
  expect(workerPassThrough({ PATH: "/usr/bin" })).toEqual({ env: {}, names: [] });
});

test("every KEEL_ worker setting in the docs' worker tables is one the worker reads", () => {
  const passed = workerPassThrough({
    KEEL_MAX_CONCURRENT_ACTIVITIES: "10",
    KEEL_SHUTDOWN_GRACE_SECONDS: "5",
    KEEL_SANDBOX: "on",
    KEEL_SANDBOX_NETWORK_FULL: "off",
    KEEL_SANDBOX_MAX_SECONDS: "60",
    KEEL_WORKSPACE_IDLE_EVICT_SECONDS: "0",
    KEEL_LIVE_EVENTS: "off",
    KEEL_OPENAI_TIMEOUT_MS: "1000",
    KEEL_ANTHROPIC_PROMPT_CACHING: "true",
    KEEL_SINGLE_TENANT: "dev",
    KEEL_WORKER_TOOLS: "on",
    KEEL_LAUNCHER: "local",
    KEEL_TENANT_BUDGET_RECHECK_SECONDS: "5",
  });
  expect(passed.names).toHaveLength(13);
});
