/**
 * `keel dev` end to end: the whole local stack as a subprocess with its own data folder, the demo
 * run (steered mid-run), what it prints, what it leaves in S3 and in the workspace, a worker
 * killed and restarted, and a clean
 * stop on Ctrl-C with no process of the stack left behind.
 */

import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEMO_DONE_LINE, DEMO_TENANT } from "../../../src/cli/demo";
import { LOCAL_ACCESS_KEY_ID, LOCAL_SECRET_ACCESS_KEY } from "../../../src/cli/devstack/s3-server";
import { createS3Client } from "../../../src/store/s3-config";
import { SessionStore } from "../../../src/store/session-store";
import { testTmpDir } from "../../support/integration-env";
import { holdKeelDevLock, KEEL_DEV_LOCK_WAIT_MS } from "../../support/keel-dev-lock";
import { messagesOf } from "../../support/run-harness";
import { type KeelDev, printed, processesMentioning, runKeel, startKeelDev } from "./keel-process";

/** Servers, a workflow bundle and a worker start from scratch on a shared 2-core machine. */
const STACK_START_TIMEOUT_MS = 150_000;
const STOP_TIMEOUT_MS = 30_000;

jest.setTimeout(STACK_START_TIMEOUT_MS + 60_000);

let dataDir: string;
let dev: KeelDev;

/** Worker settings of the caller's environment that `keel dev` passes on to its worker. */
const WORKER_SETTINGS = { KEEL_MCP_MOUNTS: "/usr/share", KEEL_LIVE_EVENTS_INTERVAL_MS: "200" };

let releaseStackLock: (() => void) | undefined;
beforeAll(async () => {
  releaseStackLock = await holdKeelDevLock();
}, KEEL_DEV_LOCK_WAIT_MS);

beforeAll(() => {
  dataDir = mkdtempSync(join(testTmpDir(), "keel-dev-"));
  dev = startKeelDev(dataDir, [], WORKER_SETTINGS);
});

afterAll(async () => {
  try {
    await dev?.stop("SIGKILL");
  } finally {
    releaseStackLock?.();
  }
});

test("keel dev brings the stack up, runs the steered demo, and stops without leftovers", async () => {
  const output = await dev.waitFor(DEMO_DONE_LINE, STACK_START_TIMEOUT_MS);

  // Every step is announced and the stack is described.
  expect(output).toMatch(/Temporal dev server \+ web UI, S3 server, workflow bundle … ok/);
  expect(output).toMatch(/local LLM server \(no provider key set\) … ok/);
  expect(output).toMatch(/worker … ok/);
  expect(output).toMatch(/HTTP API … ok/);
  expect(output).toContain("KEEL_API_KEY=keel-dev-key");
  expect(output).toContain("KEEL_ADMIN_KEY=keel-dev-admin-key");
  // The caller's worker settings are named (not their values) and are in the worker's environment.
  expect(printed(output, "worker env")).toBe(
    "KEEL_LIVE_EVENTS_INTERVAL_MS, KEEL_MCP_MOUNTS (passed on from this environment)",
  );
  const workerEnviron = readFileSync(`/proc/${output.match(/worker\s+pid (\d+),/)?.[1]}/environ`, "utf8");
  for (const [name, value] of Object.entries(WORKER_SETTINGS))
    expect(workerEnviron.split("\0")).toContain(`${name}=${value}`);

  // The run was steered while it worked and completed.
  expect(output).toMatch(/→ steer steered/);
  expect(output).toContain("■ run completed");

  // The printed Temporal UI link points at the run's timeline and the UI serves it; a second link
  // lists failed runs by their KeelStatus (Temporal says Completed for every run that ended).
  expect(output).toMatch(/failed runs\s+http:\/\/\S+\/workflows\?query=KeelStatus%20%3D%20%22failed%22/);
  const workflowLink = output.match(
    /Temporal UI\s+(http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\/(\S+)\/(\S+)\/timeline)/,
  );
  expect(workflowLink).not.toBeNull();
  const [, link, encodedWorkflowId] = workflowLink as RegExpMatchArray;
  const workflowId = decodeURIComponent(encodedWorkflowId as string);
  const sessionId = workflowId.replace(`keel-run/${DEMO_TENANT}/`, "");
  expect(workflowId).toBe(`keel-run/${DEMO_TENANT}/${sessionId}`);
  const page = await fetch(link as string);
  await page.text();
  expect(page.status).toBe(200);

  // The printed S3 key holds the session: it ends with the assistant's answer, after the steer.
  const s3Key = printed(output, "S3 session");
  expect(s3Key).toBe(`s3://keel/tenants/${DEMO_TENANT}/sessions/${sessionId}/`);
  const endpoint = output.match(/S3\s+(http:\/\/127\.0\.0\.1:\d+) \(bucket keel\)/)?.[1];
  expect(endpoint).toBeDefined();
  const settings = {
    bucket: "keel",
    prefix: "",
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    accessKeyId: LOCAL_ACCESS_KEY_ID,
    secretAccessKey: LOCAL_SECRET_ACCESS_KEY,
    checksums: "when_required" as const,
  };
  const s3 = createS3Client(settings);
  try {
    const store = new SessionStore(s3, settings);
    const { entries } = await store.readEntries({ tenantId: DEMO_TENANT, sessionId });
    const messages = messagesOf(entries.map((stored) => stored.entry));
    const last = messages.at(-1);
    expect(last?.role).toBe("assistant");
    expect(last?.role === "assistant" && last.stopReason).toBe("stop");
    expect(JSON.stringify(last)).toContain("Successfully replaced");
    const userTexts = messages.flatMap((message) =>
      message.role === "user" && typeof message.content === "string" ? [message.content] : [],
    );
    expect(userTexts).toEqual([
      expect.stringContaining("[scenario:demo]"),
      expect.stringContaining("single line"),
    ]);
    const edit = messages.find((message) => message.role === "toolResult" && message.toolName === "edit");
    expect(edit?.role === "toolResult" && edit.isError).toBe(false);
  } finally {
    s3.destroy();
  }

  // The copy of the sample project was edited; the committed sample was not.
  const workspace = printed(output, "workspace") as string;
  expect(workspace).toBe(join(dataDir, "workspaces", DEMO_TENANT, sessionId));
  const readme = readFileSync(join(workspace, "README.md"), "utf8");
  expect(readme.split("\n").slice(0, 3)).toEqual([
    "# Sample project",
    "",
    expect.stringContaining("Touched by the Keel demo"),
  ]);
  expect(readFileSync(join(__dirname, "../../../examples/sample-project/README.md"), "utf8")).not.toContain(
    "Touched by the Keel demo",
  );

  // Ctrl-C stops everything: servers, worker and their reapers.
  // A worker killed (`kill -9`) is restarted and said to be; a run started then completes.
  const workerPid = Number(output.match(/worker\s+pid (\d+),/)?.[1]);
  expect(workerPid).toBeGreaterThan(0);
  process.kill(workerPid, "SIGKILL");
  const restarted = await dev.waitFor("keel dev: worker restarted (pid", 120_000);
  expect(restarted).toContain(`keel dev: worker (pid ${workerPid}) died; restarting it.`);
  const apiUrl = output.match(/API\s+(http:\/\/127\.0\.0\.1:\d+)/)?.[1] as string;
  const after = await runKeel(["run", "after the restart", "--follow"], {
    KEEL_API_URL: apiUrl,
    KEEL_API_KEY: "keel-dev-key",
  });
  expect(after.code).toBe(0);
  expect(after.stdout).toContain("■ run completed");

  // Tenant administration works with the printed operator key; the tenant key is refused with a
  // hint that names the operator key's variable.
  const created = await runKeel(["admin", "tenant", "create", "acme"], {
    KEEL_API_URL: apiUrl,
    KEEL_ADMIN_KEY: "keel-dev-admin-key",
  });
  expect(created).toMatchObject({ code: 0, stdout: "created tenant acme\n" });
  const refused = await runKeel(["admin", "tenant", "list"], {
    KEEL_API_URL: apiUrl,
    KEEL_API_KEY: "keel-dev-key",
  });
  expect(refused.code).toBe(3);
  expect(refused.stderr).toContain("Set KEEL_ADMIN_KEY or pass --key");

  const stackProcesses = processesMentioning(dataDir);
  expect(stackProcesses.length).toBeGreaterThanOrEqual(3); // temporal, weed, worker (+ reapers)
  const code = await Promise.race([
    dev.stop("SIGINT"),
    new Promise<never>((_, fail) =>
      setTimeout(() => fail(new Error("keel dev did not stop")), STOP_TIMEOUT_MS),
    ),
  ]);
  expect(code).toBe(0);
  expect(dev.output()).toContain("Stopped.");
  const deadline = Date.now() + 10_000;
  while (processesMentioning(dataDir).length > 0 && Date.now() < deadline) {
    await sleep(250);
  }
  expect(processesMentioning(dataDir)).toEqual([]);
});
