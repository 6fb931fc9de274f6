/**
 * `keel dev --runner` end to end: the stack starts a `keel runner` for the dev tenant's `dev-runner`
 * environment and makes it the tenant's default; the demo and a `keel run` have their tools run on
 * it (in its own directories), its process holds none of the worker's settings, Ctrl-C stops it,
 * and a second start reuses the environment with a fresh token, the previous one revoked.
 */

import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEMO_DONE_LINE } from "../../../src/cli/demo";
import { DEV_RUNNER_ENVIRONMENT } from "../../../src/cli/devstack/dev-runner";
import { testTmpDir } from "../../support/integration-env";
import { type KeelDev, printed, processesMentioning, runKeel, startKeelDev } from "./keel-process";

const STACK_START_TIMEOUT_MS = 150_000;
const STOP_TIMEOUT_MS = 30_000;

jest.setTimeout(2 * STACK_START_TIMEOUT_MS + 120_000);

let dataDir: string;
let dev: KeelDev | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(testTmpDir(), "keel-dev-runner-"));
});

afterAll(async () => {
  await dev?.stop("SIGKILL");
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
  expect(readFileSync(join(workspace, "README.md"), "utf8").split("\n")[2]).toContain(
    "Touched by the Keel demo",
  );

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
  const claims = readFileSync(runnerLog, "utf8")
    .split("\n")
    .filter((line) => line.includes('"msg":"call claimed"'));
  expect(claims.some((line) => line.includes('"tool":"ls"'))).toBe(true);
  expect(claims.some((line) => line.includes('"tool":"edit"'))).toBe(true);

  const shown = await runKeel(["env", "show", DEV_RUNNER_ENVIRONMENT, "--json"], cli);
  const firstTokens = (JSON.parse(shown.stdout) as { tokens: Array<{ tokenId: string }> }).tokens;
  expect(firstTokens).toHaveLength(1);

  // Ctrl-C stops the runner with the rest.
  await stopDev(dev);
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

  await stopDev(dev);
  dev = undefined;
  const deadline = Date.now() + 10_000;
  while (processesMentioning(dataDir).length > 0 && Date.now() < deadline) await sleep(250);
  expect(processesMentioning(dataDir)).toEqual([]);
});
