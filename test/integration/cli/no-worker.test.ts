/**
 * A run whose only worker was killed, as a person at the CLI sees it: `keel show` answers within a
 * bound and says that no worker polls the run's task queue (instead of blocking for minutes and
 * blaming Temporal), and `keel events --follow` says why it waits, keeps waiting, and follows the
 * run to its end once a worker is back.
 */
import { uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, type RunStage, slowEchoScenario } from "../../support/run-harness";
import { type CliApi, runKeel, spawnKeel, startCliApi } from "./keel-process";

const KEY = `cli-key-${uniqueName("k")}`;
let stage: RunStage;
let api: CliApi;
let env: Record<string, string>;

beforeAll(async () => {
  stage = await createRunStage();
  api = await startCliApi(stage, { [KEY]: stage.tenantId });
  env = { KEEL_API_URL: api.url, KEEL_API_KEY: KEY };
});

afterAll(async () => {
  await api?.close();
  await stage?.close();
});

jest.setTimeout(180_000);

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

test("its worker killed: show says so within seconds, events --follow waits and then follows the run to its end", async () => {
  // A run whose model call takes long, and its only worker killed while it waits (`kill -9`).
  slowEchoScenario(stage, "no-worker", 15_000);
  const worker = await stage.startWorker();
  const sessionId = uniqueName("cli");
  const started = await runKeel(["run", "[scenario:no-worker] hello", "--session", sessionId, "--json"], env);
  expect(JSON.parse(started.stdout)).toMatchObject({ delivery: "started" });
  await worker.kill();

  const before = Date.now();
  const shown = await runKeel(["show", sessionId], env);
  const elapsedMs = Date.now() - before;
  expect(shown.code).toBe(1);
  // Temporal lists a killed worker's poller for up to a minute; after that, none is.
  const queue = `the run's task queue "${stage.taskQueue}"`;
  expect(shown.stderr).toMatch(
    new RegExp(
      `no worker is polling ${escapeRegExp(queue)}|did not answer within 10 s \\(1 worker\\(s\\) polled ${escapeRegExp(queue)}`,
    ),
  );
  expect(shown.stderr).not.toContain("workflow service is unavailable");
  // At most two bounded waits (5 s each) and a diagnosis, not four retries of a query Temporal holds for minutes.
  expect(elapsedMs).toBeLessThan(30_000);

  const follower = spawnKeel(["events", sessionId, "--follow"], env);
  await eventually(
    async () => follower.stderr().includes("Waiting for the run:") || undefined,
    60_000,
    "the waiting note",
  );
  expect(follower.stderr()).toContain(`${queue}`);

  await stage.startWorker();
  expect(await follower.exited).toBe(0);
  expect(follower.stdout()).toContain("You said: hello");
  expect(follower.stdout()).toMatch(/■ run completed/);
  // Said once, however long the wait.
  expect(follower.stderr().match(/Waiting for the run:/g)).toHaveLength(1);
});
