/**
 * The API process while its Temporal server stops and starts again under concurrent requests:
 * requests are answered (503 while it is down), the process never crashes, and it serves again
 * once Temporal is back. Runs its own Temporal dev server (persisted, restarted on the same port and
 * data) and the API as a separate process (`src/api/server.ts`), so a crash is an exit.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { join, resolve } from "node:path";
import { startTemporalDevServer, type TemporalDevServer } from "../../../src/cli/devstack/temporal-server";
import { s3SettingsToEnv } from "../../../src/store/s3-config";
import { s3Settings, testTmpDir, uniqueName } from "../../support/integration-env";
import { eventually } from "../../support/run-harness";

const projectRoot = resolve(__dirname, "../../..");
const KEY = "restart-key";
const dataDir = mkdtempSync(join(testTmpDir(), "temporal-restart-"));
let temporal: TemporalDevServer;
let apiProcess: ChildProcess;
let output = "";
let baseUrl: string;

beforeAll(async () => {
  temporal = await startTemporalDevServer({ dataDir, persist: true });
  apiProcess = spawn(process.execPath, ["--import", "tsx", join(projectRoot, "src/api/server.ts")], {
    cwd: projectRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      KEEL_API_PORT: "0",
      KEEL_TEMPORAL_ADDRESS: temporal.address,
      KEEL_TEMPORAL_NAMESPACE: temporal.namespace,
      KEEL_API_KEYS: JSON.stringify({
        [createHash("sha256").update(KEY).digest("hex")]: uniqueName("tenant"),
      }),
      ...s3SettingsToEnv(s3Settings()),
    },
  });
  apiProcess.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  apiProcess.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const port = await eventually(
    async () => {
      const line = output.split("\n").find((candidate) => candidate.includes('"api started"'));
      return line ? (JSON.parse(line).port as number) : undefined;
    },
    60_000,
    "the API process to start",
  );
  baseUrl = `http://127.0.0.1:${port}`;
}, 120_000);

afterAll(async () => {
  if (apiProcess && apiProcess.exitCode === null) {
    const exited = new Promise((done) => apiProcess.once("exit", done));
    apiProcess.kill("SIGTERM");
    await exited;
  }
  await temporal?.process.stop();
});

/** GET of a session that does not exist: 404 when Temporal answers, 503 when it cannot. */
async function readMissingSession(): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/sessions/${uniqueName("missing")}`, {
    headers: { authorization: `Bearer ${KEY}` },
    signal: AbortSignal.timeout(60_000),
  });
  await response.text();
  return response.status;
}

test("concurrent requests while Temporal stops and restarts: answered, the process survives, and it serves again", async () => {
  expect(await readMissingSession()).toBe(404);

  await temporal.process.stop();
  // Requests staggered so that some are inside the client's retry timers while others fail and
  // report the connection as failed.
  const during: Promise<number>[] = [];
  for (let i = 0; i < 20; i++) {
    during.push(readMissingSession());
    await new Promise((r) => setTimeout(r, 100));
  }
  const statuses = await Promise.all(during);
  expect(statuses.every((status) => status === 503)).toBe(true);

  temporal = await startTemporalDevServer({
    dataDir,
    persist: true,
    port: temporal.ports.grpc,
  });
  const more = await Promise.all(Array.from({ length: 10 }, () => readMissingSession()));
  expect(more.every((status) => status === 404 || status === 503)).toBe(true);
  await eventually(async () => ((await readMissingSession()) === 404 ? true : undefined), 30_000);
  expect({ exitCode: apiProcess.exitCode, signal: apiProcess.signalCode }).toEqual({
    exitCode: null,
    signal: null,
  });
  expect(output).not.toContain("Channel has been shut down");
}, 180_000);
