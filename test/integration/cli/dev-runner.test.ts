/**
 * `keel dev --runner` end to end: the stack starts a `keel runner` for the dev tenant's `dev-runner`
 * environment and makes it the tenant's default; the demo and a `keel run` have their tools run on
 * it (in its own directories), its process holds none of the worker's settings; after a crash a
 * second start reuses the environment with a fresh token, the previous one revoked; Ctrl-C stops
 * the runner; and a start without `--runner` runs tools on the worker again.
 */

import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEMO_DONE_LINE } from "../../../src/cli/demo";
import { DEV_RUNNER_ENVIRONMENT, setDevRunnerDefault } from "../../../src/cli/devstack/dev-runner";
import { createS3Client } from "../../../src/store/s3-config";
import { TenantStore } from "../../../src/tenants/store";
import { s3Settings, testTmpDir } from "../../support/integration-env";
import { holdKeelDevLock, KEEL_DEV_LOCK_WAIT_MS } from "../../support/keel-dev-lock";
import { type KeelDev, printed, processesMentioning, runKeel, startKeelDev } from "./keel-process";

const STACK_START_TIMEOUT_MS = 150_000;
const STOP_TIMEOUT_MS = 30_000;

jest.setTimeout(3 * STACK_START_TIMEOUT_MS + 120_000);

let dataDir: string;
let dev: KeelDev | undefined;

let releaseStackLock: (() => void) | undefined;
beforeAll(async () => {
  releaseStackLock = await holdKeelDevLock();
}, KEEL_DEV_LOCK_WAIT_MS);

beforeAll(() => {
  dataDir = mkdtempSync(join(testTmpDir(), "keel-dev-runner-"));
});

afterAll(async () => {
  try {
    await dev?.stop("SIGKILL");
  } finally {
    releaseStackLock?.();
  }
});

/** The variables a process was started with (`/proc/<pid>/environ`). */
function environOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await sleep(250);
}

/** The `call claimed` lines of the runner's log. */
function runnerClaims(runnerLog: string): string[] {
  return readFileSync(runnerLog, "utf8")
    .split("\n")
    .filter((line) => line.includes('"msg":"call claimed"'));
}

async function stopDev(running: KeelDev): Promise<void> {
  const code = await Promise.race([
    running.stop("SIGINT"),
    new Promise<never>((_, fail) =>
      setTimeout(() => fail(new Error("keel dev did not stop")), STOP_TIMEOUT_MS),
    ),
  ]);
  expect(code).toBe(0);
}

test("keel dev --runner runs the tenant's tools on a runner that holds only its token", async () => {
  dev = startKeelDev(dataDir, ["--runner"]);
  const output = await dev.waitFor(DEMO_DONE_LINE, STACK_START_TIMEOUT_MS);
  expect(output).toMatch(/runner \(environment dev-runner\) … ok/);
  const runnerLine = printed(output, "runner") as string;
  const runnerPid = Number(runnerLine.match(/^pid (\d+),/)?.[1]);
  const runnerRoot = join(dataDir, "runner", DEV_RUNNER_ENVIRONMENT);
  const runnerLog = join(dataDir, "runner.log");
  expect(runnerLine).toContain(`environment ${DEV_RUNNER_ENVIRONMENT}`);
  expect(runnerLine).toContain(`workspaces in ${runnerRoot}`);
  expect(runnerLine).toContain(`log ${runnerLog}`);

  // The runner's whole environment: the API's URL and its token (besides PATH and HOME).
  const environ = environOf(runnerPid);
  expect(environ.KEEL_RUNNER_TOKEN).toMatch(/^keel_rt_/);
  expect(environ.KEEL_API_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(
    Object.keys(environ).filter((name) =>
      /^(KEEL_S3_|KEEL_TEMPORAL_|AWS_|OPENAI_|ANTHROPIC_|KEEL_MODEL)/.test(name),
    ),
  ).toEqual([]);

  // The demo ran on the runner: its edit is in the runner's copy of the sample project.
  expect(output).toContain("■ run completed");
  const workspace = printed(output, "workspace") as string;
  expect(workspace.startsWith(`${runnerRoot}/demo-`)).toBe(true);
  const readmeLine = readFileSync(join(workspace, "README.md"), "utf8").split("\n")[2] ?? "";
  if (!readmeLine.includes("Touched by the Keel demo")) {
    // Said in full when it fails: what the demo printed and what the runner claimed.
    const claims = existsSync(runnerLog) ? runnerClaims(runnerLog).join("\n") : "(no runner log)";
    throw new Error(
      `the demo's edit is not in the runner's copy (README line 3: ${JSON.stringify(readmeLine)})\n--- keel dev printed:\n${output.slice(-6000)}\n--- runner claims:\n${claims.slice(-3000)}`,
    );
  }

  // A `keel run` without --env goes to the runner (the tenant's default): its `ls` lists a file
  // that exists only in the runner's directory of the session, and the runner's log has the call.
  const sessionId = "runner-ls";
  mkdirSync(join(runnerRoot, sessionId), { recursive: true });
  writeFileSync(join(runnerRoot, sessionId, "only-on-the-runner.txt"), "here\n");
  const apiUrl = output.match(/API\s+(http:\/\/127\.0\.0\.1:\d+)/)?.[1] as string;
  const cli = { KEEL_API_URL: apiUrl, KEEL_API_KEY: "keel-dev-key" };
  const run = await runKeel(["run", "list the files", "--session", sessionId, "--follow"], cli);
  expect(run.code).toBe(0);
  expect(run.stdout).toContain("■ run completed");
  expect(run.stdout).toContain("only-on-the-runner.txt");
  const claims = runnerClaims(runnerLog);
  expect(claims.some((line) => line.includes('"tool":"ls"'))).toBe(true);
  expect(claims.some((line) => line.includes('"tool":"edit"'))).toBe(true);

  const shown = await runKeel(["env", "show", DEV_RUNNER_ENVIRONMENT, "--json"], cli);
  const firstTokens = (JSON.parse(shown.stdout) as { tokens: Array<{ tokenId: string }> }).tokens;
  expect(firstTokens).toHaveLength(1);

  // keel dev crashes (no clean stop, so nothing revoked the token); its processes go with it.
  await dev.stop("SIGKILL");
  await waitUntil(() => processesMentioning(dataDir).length === 0, 20_000);
  expect(isAlive(runnerPid)).toBe(false);

  // A second start reuses the environment: a new token, the first one revoked.
  dev = startKeelDev(dataDir, ["--runner", "--no-demo"]);
  const again = await dev.waitFor("Press Ctrl-C to stop.", STACK_START_TIMEOUT_MS);
  const secondPid = Number((printed(again, "runner") as string).match(/^pid (\d+),/)?.[1]);
  const secondToken = environOf(secondPid).KEEL_RUNNER_TOKEN;
  expect(secondToken).not.toBe(environ.KEEL_RUNNER_TOKEN);
  const secondApi = again.match(/API\s+(http:\/\/127\.0\.0\.1:\d+)/)?.[1] as string;
  const reshown = await runKeel(["env", "show", DEV_RUNNER_ENVIRONMENT, "--json"], {
    KEEL_API_URL: secondApi,
    KEEL_API_KEY: "keel-dev-key",
  });
  const tokens = (JSON.parse(reshown.stdout) as { tokens: Array<{ tokenId: string }> }).tokens;
  expect(tokens).toHaveLength(1);
  expect(tokens[0]?.tokenId).not.toBe(firstTokens[0]?.tokenId);

  // Ctrl-C stops the runner with the rest.
  await stopDev(dev);
  expect(isAlive(secondPid)).toBe(false);

  // Without --runner the tools run on the worker again: no runner, and a run completes without one.
  dev = startKeelDev(dataDir, ["--no-demo"]);
  const plain = await dev.waitFor("Press Ctrl-C to stop.", STACK_START_TIMEOUT_MS);
  expect(printed(plain, "runner")).toBeUndefined();
  const plainApi = plain.match(/API\s+(http:\/\/127\.0\.0\.1:\d+)/)?.[1] as string;
  const claimsBefore = runnerClaims(runnerLog).length;
  const onWorker = await runKeel(["run", "list the files", "--session", "worker-ls", "--follow"], {
    KEEL_API_URL: plainApi,
    KEEL_API_KEY: "keel-dev-key",
  });
  expect(onWorker.code).toBe(0);
  expect(onWorker.stdout).toContain("■ run completed");
  expect(runnerClaims(runnerLog)).toHaveLength(claimsBefore);

  await stopDev(dev);
  dev = undefined;
  await waitUntil(() => processesMentioning(dataDir).length === 0, 10_000);
  expect(processesMentioning(dataDir)).toEqual([]);
});

test("the runner default is set and removed without touching the tenant's other settings", async () => {
  const s3 = s3Settings();
  const tenantId = `dev-${randomUUID().slice(0, 8)}`;
  const client = createS3Client(s3);
  try {
    const store = new TenantStore(client, s3.bucket, s3.prefix);
    const own = { models: ["local-*"], defaults: { model: "local-chat" } };
    await store.putSettings(tenantId, own);
    await setDevRunnerDefault(s3, tenantId, true);
    expect(await store.getSettings(tenantId)).toEqual({
      models: ["local-*"],
      defaults: { model: "local-chat", environment: DEV_RUNNER_ENVIRONMENT },
    });
    await setDevRunnerDefault(s3, tenantId, false);
    expect(await store.getSettings(tenantId)).toEqual(own);

    // Only a default naming the dev runner is removed; the tenant's own choice stays.
    await store.putSettings(tenantId, { defaults: { environment: "laptop" } });
    await setDevRunnerDefault(s3, tenantId, false);
    expect(await store.getSettings(tenantId)).toEqual({ defaults: { environment: "laptop" } });
    await store.putSettings(tenantId, { defaults: { environment: DEV_RUNNER_ENVIRONMENT } });
    await setDevRunnerDefault(s3, tenantId, false);
    expect(await store.getSettings(tenantId)).toEqual({});
  } finally {
    client.destroy();
  }
});
